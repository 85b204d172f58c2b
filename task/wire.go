package task

import (
	"encoding/xml"
	"strconv"
	"strings"
	"time"

	"agentgw/manifest"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

// Namespaces and disco features of the task protocol ("Protocol
// Namespaces and Identifiers").
const (
	// NS is the task core namespace and feature.
	NS = "urn:xmpp:agent-task:0"
	// FeatureProgress is advertised for progress events.
	FeatureProgress = NS + "#progress"
	// FeatureCancel is advertised for cancellation.
	FeatureCancel = NS + "#cancel"
	// FeatureInput is advertised for interactive input.
	FeatureInput = NS + "#input"
	// MediaTypeJSON is the only media type of JSON-bearing elements.
	MediaTypeJSON = "application/json"
)

// hashAlgo is the only XEP-0300 algorithm version 0 uses for manifest
// hashes.
const hashAlgo = wire.HashAlgoSHA256

// Wire parsing limits.
const (
	// maxRevisionDigits bounds a parsed revision attribute (xs:nonNegativeInteger
	// is unbounded; an int64 is not).
	maxRevisionDigits = 18
	// maxToolNameBytes bounds the tool attribute of <invoke/>; manifests
	// bound tool names far below this.
	maxToolNameBytes = 4096
)

func name(local string) xml.Name { return xml.Name{Space: NS, Local: local} }

// Invoke is the <invoke/> element: a request to execute a tool.
type Invoke struct {
	// RequestID is the caller's request ID.
	RequestID string
	// Tool is the exact tool name.
	Tool string
	// APIVersion is the pinned API version.
	APIVersion string
	// ManifestHash is the SHA-256 digest in <manifest-hash/>.
	ManifestHash [32]byte
	// Arguments is the character data of <arguments/>: JSON text, not yet
	// checked.
	Arguments string
	// Deadline is the optional <deadline/>, or the zero Instant.
	Deadline Instant
}

// ParseInvoke parses an <invoke/> element. Everything it checks is
// syntax, independent of any endpoint, so its <bad-request/> errors
// reveal nothing and may be returned before authorization: identifier and
// version grammar, the element sequence (unknown elements, including
// extensions, are refused), a sha-256 hash of 32 bytes, the media type and
// the XEP-0082 deadline. The arguments are checked later by
// Machine.Prepare.
func ParseInvoke(el wire.Element) (Invoke, error) {
	var v Invoke
	if err := checkName(el, "invoke"); err != nil {
		return v, err
	}
	var err error
	if v.RequestID, err = idAttr(el, "request-id"); err != nil {
		return v, err
	}
	tool, ok := el.AttrValue("tool")
	if !ok || !manifest.ValidToolName(tool) || len(tool) > maxToolNameBytes {
		return v, badRequest("invalid or missing tool")
	}
	v.Tool = tool
	if v.APIVersion, err = versionAttr(el); err != nil {
		return v, err
	}
	kids, err := sequence(el, seq{"manifest-hash", true}, seq{"arguments", true}, seq{"deadline", false})
	if err != nil {
		return v, err
	}
	if v.ManifestHash, err = parseHashContainer(kids["manifest-hash"]); err != nil {
		return v, err
	}
	if v.Arguments, err = jsonText(kids["arguments"], true); err != nil {
		return v, err
	}
	if d, ok := kids["deadline"]; ok {
		text, err := textOnly(d)
		if err != nil {
			return v, err
		}
		if v.Deadline, err = ParseDateTime(text); err != nil {
			return v, badRequest("deadline is not an XEP-0082 DateTime")
		}
	}
	return v, nil
}

// TokenReader implements xmlstream.Marshaler.
func (v Invoke) TokenReader() xml.TokenReader {
	var deadline xml.TokenReader
	if !v.Deadline.IsZero() {
		deadline = wire.TextElem(name("deadline"), v.Deadline.String())
	}
	return wire.Elem(name("invoke"), []xml.Attr{
		wire.Attr("request-id", v.RequestID),
		wire.Attr("tool", v.Tool),
		wire.Attr("api-version", v.APIVersion),
	},
		hashContainer("manifest-hash", v.ManifestHash),
		wire.Elem(name("arguments"), []xml.Attr{wire.Attr("media-type", MediaTypeJSON)}, wire.Text(v.Arguments)),
		deadline,
	)
}

// Accepted is the <accepted/> element: durable admission.
type Accepted struct {
	// RequestID is the caller's request ID; TaskID the new task's ID.
	RequestID, TaskID string
	// Revision is always 0.
	Revision int64
	// Created is the admission time; RetainUntil the retention promise.
	Created, RetainUntil time.Time
}

// ParseAccepted parses an <accepted/> element.
func ParseAccepted(el wire.Element) (Accepted, error) {
	var v Accepted
	if err := checkEmpty(el, "accepted"); err != nil {
		return v, err
	}
	var err error
	if v.RequestID, err = idAttr(el, "request-id"); err != nil {
		return v, err
	}
	if v.TaskID, err = idAttr(el, "task-id"); err != nil {
		return v, err
	}
	if v.Revision, err = revisionAttr(el, "revision"); err != nil {
		return v, err
	}
	if v.Created, err = timeAttr(el, "created"); err != nil {
		return v, err
	}
	v.RetainUntil, err = timeAttr(el, "retain-until")
	return v, err
}

// TokenReader implements xmlstream.Marshaler.
func (v Accepted) TokenReader() xml.TokenReader {
	return wire.Elem(name("accepted"), []xml.Attr{
		wire.Attr("request-id", v.RequestID),
		wire.Attr("task-id", v.TaskID),
		wire.Attr("revision", strconv.FormatInt(v.Revision, 10)),
		wire.Attr("created", FormatDateTime(v.Created)),
		wire.Attr("retain-until", FormatDateTime(v.RetainUntil)),
	})
}

// Event is one lifecycle event: a row of the event log and the <event/>
// element of its notification.
type Event struct {
	// TaskID is the task's ID.
	TaskID string
	// ID is the event ID ("evt-" and 32 hex digits); a resent event keeps
	// it.
	ID string
	// Revision is the task revision this event announces.
	Revision int64
	// Type is the event type.
	Type EventType
	// Payload is the JSON object, in RFC 8785 form when built by this
	// package; as received when parsed.
	Payload []byte
}

// ParseEvent parses an <event/> element; its payload is not validated
// (see ValidatePayload).
func ParseEvent(el wire.Element) (Event, error) {
	var v Event
	if err := checkName(el, "event"); err != nil {
		return v, err
	}
	var err error
	if v.TaskID, err = idAttr(el, "task-id"); err != nil {
		return v, err
	}
	if v.ID, err = idAttr(el, "event-id"); err != nil {
		return v, err
	}
	if v.Revision, err = revisionAttr(el, "revision"); err != nil {
		return v, err
	}
	typ, _ := el.AttrValue("type")
	if v.Type = EventType(typ); !v.Type.Valid() {
		return v, badRequest("invalid event type")
	}
	text, err := textOnly(el)
	if err != nil {
		return v, err
	}
	v.Payload = []byte(text)
	return v, nil
}

// TokenReader implements xmlstream.Marshaler.
func (v Event) TokenReader() xml.TokenReader {
	return wire.Elem(name("event"), []xml.Attr{
		wire.Attr("task-id", v.TaskID),
		wire.Attr("event-id", v.ID),
		wire.Attr("revision", strconv.FormatInt(v.Revision, 10)),
		wire.Attr("type", string(v.Type)),
	}, wire.Text(string(v.Payload)))
}

// Message returns the notification of v: a message of type normal from
// the endpoint to the caller's route, whose only child is the <event/>.
// Its stanza ID is the event ID, so a resent event is the same stanza. No
// XEP-0334 no-copy hint (bare-JID fallback must stay possible) and no
// XEP-0184 receipt request are added ("Message Routing, Storage, and
// Copies").
func (v Event) Message(from, to jid.JID) xml.TokenReader {
	return stanza.Message{ID: v.ID, From: from, To: to, Type: stanza.NormalMessage}.Wrap(v.TokenReader())
}

// TaskStateRequest is the <task-state-request/> element.
type TaskStateRequest struct {
	// TaskID names the task.
	TaskID string
}

// ParseTaskStateRequest parses a <task-state-request/>; a malformed task
// ID is <bad-request/>.
func ParseTaskStateRequest(el wire.Element) (TaskStateRequest, error) {
	id, err := parseTaskRef(el, "task-state-request")
	return TaskStateRequest{TaskID: id}, err
}

// TokenReader implements xmlstream.Marshaler.
func (v TaskStateRequest) TokenReader() xml.TokenReader {
	return wire.Elem(name("task-state-request"), []xml.Attr{wire.Attr("task-id", v.TaskID)})
}

// TaskState is the <task-state/> element: complete resumable state.
type TaskState struct {
	// TaskID names the task.
	TaskID string
	// Endpoint is the target bare JID.
	Endpoint string
	// State is the current state.
	State State
	// Revision is the current global revision.
	Revision int64
	// APIVersion is the pinned API version.
	APIVersion string
	// ManifestHash is the pinned SHA-256 manifest digest.
	ManifestHash [32]byte
	// Created is the admission time; Updated the time of the last event.
	Created, Updated time.Time
	// Deadline is the effective deadline; zero is omitted.
	Deadline time.Time
	// RetainUntil is the retention promise.
	RetainUntil time.Time
	// ResultAvailable reports that <task-result-request/> will succeed.
	ResultAvailable bool
	// PendingInput is the complete input_required object while input is
	// pending, else nil.
	PendingInput []byte
}

// ParseTaskState parses a <task-state/> element.
func ParseTaskState(el wire.Element) (TaskState, error) {
	var v TaskState
	if err := checkName(el, "task-state"); err != nil {
		return v, err
	}
	var err error
	if v.TaskID, err = idAttr(el, "task-id"); err != nil {
		return v, err
	}
	ep, _ := el.AttrValue("endpoint")
	if j, err := jid.Parse(ep); err != nil || j.Resourcepart() != "" {
		return v, badRequest("invalid endpoint")
	}
	v.Endpoint = ep
	st, _ := el.AttrValue("state")
	if v.State = State(st); !v.State.Valid() {
		return v, badRequest("invalid state")
	}
	if v.Revision, err = revisionAttr(el, "revision"); err != nil {
		return v, err
	}
	if v.APIVersion, err = versionAttr(el); err != nil {
		return v, err
	}
	if v.Created, err = timeAttr(el, "created"); err != nil {
		return v, err
	}
	if v.Updated, err = timeAttr(el, "updated"); err != nil {
		return v, err
	}
	if _, ok := el.AttrValue("deadline"); ok {
		if v.Deadline, err = timeAttr(el, "deadline"); err != nil {
			return v, err
		}
	}
	if v.RetainUntil, err = timeAttr(el, "retain-until"); err != nil {
		return v, err
	}
	ra, _ := el.AttrValue("result-available")
	if v.ResultAvailable, err = parseBool(ra); err != nil {
		return v, err
	}
	kids, err := sequence(el, seq{"manifest-hash", true}, seq{"pending-input", false})
	if err != nil {
		return v, err
	}
	if v.ManifestHash, err = parseHashContainer(kids["manifest-hash"]); err != nil {
		return v, err
	}
	if p, ok := kids["pending-input"]; ok {
		text, err := jsonText(p, true)
		if err != nil {
			return v, err
		}
		v.PendingInput = []byte(text)
	}
	return v, nil
}

// TokenReader implements xmlstream.Marshaler.
func (v TaskState) TokenReader() xml.TokenReader {
	attrs := []xml.Attr{
		wire.Attr("task-id", v.TaskID),
		wire.Attr("endpoint", v.Endpoint),
		wire.Attr("state", string(v.State)),
		wire.Attr("revision", strconv.FormatInt(v.Revision, 10)),
		wire.Attr("api-version", v.APIVersion),
		wire.Attr("created", FormatDateTime(v.Created)),
		wire.Attr("updated", FormatDateTime(v.Updated)),
	}
	if !v.Deadline.IsZero() {
		attrs = append(attrs, wire.Attr("deadline", FormatDateTime(v.Deadline)))
	}
	attrs = append(attrs,
		wire.Attr("retain-until", FormatDateTime(v.RetainUntil)),
		wire.Attr("result-available", strconv.FormatBool(v.ResultAvailable)),
	)
	var pending xml.TokenReader
	if v.PendingInput != nil {
		pending = wire.Elem(name("pending-input"), []xml.Attr{wire.Attr("media-type", MediaTypeJSON)},
			wire.Text(string(v.PendingInput)))
	}
	return wire.Elem(name("task-state"), attrs, hashContainer("manifest-hash", v.ManifestHash), pending)
}

// TaskResultRequest is the <task-result-request/> element.
type TaskResultRequest struct {
	// TaskID names the task.
	TaskID string
}

// ParseTaskResultRequest parses a <task-result-request/>; a malformed task
// ID is <bad-request/>.
func ParseTaskResultRequest(el wire.Element) (TaskResultRequest, error) {
	id, err := parseTaskRef(el, "task-result-request")
	return TaskResultRequest{TaskID: id}, err
}

// TokenReader implements xmlstream.Marshaler.
func (v TaskResultRequest) TokenReader() xml.TokenReader {
	return wire.Elem(name("task-result-request"), []xml.Attr{wire.Attr("task-id", v.TaskID)})
}

// TaskResult is the <task-result/> element: the immutable terminal state
// and payload.
type TaskResult struct {
	// TaskID names the task.
	TaskID string
	// State is the terminal state.
	State State
	// Revision is the revision of the settlement.
	Revision int64
	// Payload is the terminal event's JSON object.
	Payload []byte
}

// ParseTaskResult parses a <task-result/> element.
func ParseTaskResult(el wire.Element) (TaskResult, error) {
	var v TaskResult
	if err := checkName(el, "task-result"); err != nil {
		return v, err
	}
	var err error
	if v.TaskID, err = idAttr(el, "task-id"); err != nil {
		return v, err
	}
	st, _ := el.AttrValue("state")
	if v.State = State(st); !v.State.Terminal() {
		return v, badRequest("invalid terminal state")
	}
	if v.Revision, err = revisionAttr(el, "revision"); err != nil {
		return v, err
	}
	text, err := jsonText(el, true)
	if err != nil {
		return v, err
	}
	v.Payload = []byte(text)
	return v, nil
}

// TokenReader implements xmlstream.Marshaler.
func (v TaskResult) TokenReader() xml.TokenReader {
	return wire.Elem(name("task-result"), []xml.Attr{
		wire.Attr("task-id", v.TaskID),
		wire.Attr("state", string(v.State)),
		wire.Attr("revision", strconv.FormatInt(v.Revision, 10)),
		wire.Attr("media-type", MediaTypeJSON),
	}, wire.Text(string(v.Payload)))
}

// ProvideInput is the <provide-input/> element: an answer to an input
// request.
type ProvideInput struct {
	// TaskID names the task; RequestID the input request answered.
	TaskID, RequestID string
	// ExpectedRevision is the revision the caller answers at.
	ExpectedRevision int64
	// Input is the character data of <input/>: JSON text, not yet checked.
	Input string
}

// ParseProvideInput parses a <provide-input/> element.
func ParseProvideInput(el wire.Element) (ProvideInput, error) {
	var v ProvideInput
	if err := checkName(el, "provide-input"); err != nil {
		return v, err
	}
	var err error
	if v.TaskID, err = idAttr(el, "task-id"); err != nil {
		return v, err
	}
	if v.RequestID, err = idAttr(el, "request-id"); err != nil {
		return v, err
	}
	if v.ExpectedRevision, err = revisionAttr(el, "expected-revision"); err != nil {
		return v, err
	}
	kids, err := sequence(el, seq{"input", true})
	if err != nil {
		return v, err
	}
	v.Input, err = jsonText(kids["input"], true)
	return v, err
}

// TokenReader implements xmlstream.Marshaler.
func (v ProvideInput) TokenReader() xml.TokenReader {
	return wire.Elem(name("provide-input"), []xml.Attr{
		wire.Attr("task-id", v.TaskID),
		wire.Attr("request-id", v.RequestID),
		wire.Attr("expected-revision", strconv.FormatInt(v.ExpectedRevision, 10)),
	}, wire.Elem(name("input"), []xml.Attr{wire.Attr("media-type", MediaTypeJSON)}, wire.Text(v.Input)))
}

// InputAccepted is the <input-accepted/> element.
type InputAccepted struct {
	// TaskID names the task.
	TaskID string
	// Revision is the revision at which the input was accepted.
	Revision int64
}

// ParseInputAccepted parses an <input-accepted/> element.
func ParseInputAccepted(el wire.Element) (InputAccepted, error) {
	id, rev, err := parseAck(el, "input-accepted")
	return InputAccepted{TaskID: id, Revision: rev}, err
}

// TokenReader implements xmlstream.Marshaler.
func (v InputAccepted) TokenReader() xml.TokenReader {
	return ackReader("input-accepted", v.TaskID, v.Revision)
}

// Cancel is the <cancel/> element: a cancellation request.
type Cancel struct {
	// TaskID names the task.
	TaskID string
	// ExpectedRevision is the revision the caller cancels at.
	ExpectedRevision int64
	// HasReason records whether <reason/> was present; Reason is its
	// parsed character data (possibly empty).
	HasReason bool
	Reason    string
}

// ParseCancel parses a <cancel/> element.
func ParseCancel(el wire.Element) (Cancel, error) {
	var v Cancel
	if err := checkName(el, "cancel"); err != nil {
		return v, err
	}
	var err error
	if v.TaskID, err = idAttr(el, "task-id"); err != nil {
		return v, err
	}
	if v.ExpectedRevision, err = revisionAttr(el, "expected-revision"); err != nil {
		return v, err
	}
	kids, err := sequence(el, seq{"reason", false})
	if err != nil {
		return v, err
	}
	if r, ok := kids["reason"]; ok {
		v.HasReason = true
		if v.Reason, err = textOnly(r); err != nil {
			return v, err
		}
	}
	return v, nil
}

// TokenReader implements xmlstream.Marshaler.
func (v Cancel) TokenReader() xml.TokenReader {
	var reason xml.TokenReader
	if v.HasReason {
		reason = wire.TextElem(name("reason"), v.Reason)
	}
	return wire.Elem(name("cancel"), []xml.Attr{
		wire.Attr("task-id", v.TaskID),
		wire.Attr("expected-revision", strconv.FormatInt(v.ExpectedRevision, 10)),
	}, reason)
}

// CancelAccepted is the <cancel-accepted/> element.
type CancelAccepted struct {
	// TaskID names the task.
	TaskID string
	// Revision is the revision at which the cancellation was accepted.
	Revision int64
}

// ParseCancelAccepted parses a <cancel-accepted/> element.
func ParseCancelAccepted(el wire.Element) (CancelAccepted, error) {
	id, rev, err := parseAck(el, "cancel-accepted")
	return CancelAccepted{TaskID: id, Revision: rev}, err
}

// TokenReader implements xmlstream.Marshaler.
func (v CancelAccepted) TokenReader() xml.TokenReader {
	return ackReader("cancel-accepted", v.TaskID, v.Revision)
}

// Parsing helpers. Every failure is a <bad-request/> with fixed text.

func checkName(el wire.Element, local string) error {
	if el.Start.Name != name(local) {
		return badRequest("unexpected element")
	}
	return nil
}

// checkEmpty checks the name of an element that may contain only
// whitespace.
func checkEmpty(el wire.Element, local string) error {
	if err := checkName(el, local); err != nil {
		return err
	}
	if len(el.Children()) > 0 || strings.Trim(el.Text(), " \t\r\n") != "" {
		return badRequest(local + " must be empty")
	}
	return nil
}

func idAttr(el wire.Element, attr string) (string, error) {
	v, ok := el.AttrValue(attr)
	if !ok || !ValidID(v) {
		return "", badRequest("invalid or missing " + attr)
	}
	return v, nil
}

func versionAttr(el wire.Element) (string, error) {
	v, ok := el.AttrValue("api-version")
	if !ok || !manifest.ValidVersion(v) {
		return "", badRequest("invalid or missing api-version")
	}
	return v, nil
}

// revisionAttr parses an xs:nonNegativeInteger ("+007" included) that
// fits an int64.
func revisionAttr(el wire.Element, attr string) (int64, error) {
	v, ok := el.AttrValue(attr)
	s := strings.TrimPrefix(strings.Trim(v, " \t\r\n"), "+")
	if !ok || s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, badRequest("invalid or missing " + attr)
	}
	if s = strings.TrimLeft(s, "0"); s == "" {
		return 0, nil
	}
	if len(s) > maxRevisionDigits {
		return 0, badRequest("invalid or missing " + attr)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, badRequest("invalid or missing " + attr)
	}
	return n, nil
}

func timeAttr(el wire.Element, attr string) (time.Time, error) {
	s, _ := el.AttrValue(attr)
	in, err := ParseDateTime(s)
	if err != nil {
		return time.Time{}, badRequest("invalid or missing " + attr)
	}
	return in.Time(), nil
}

func parseBool(s string) (bool, error) {
	switch strings.Trim(s, " \t\r\n") {
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, badRequest("invalid boolean")
}

// seq is one element of an XML Schema sequence.
type seq struct {
	local    string
	required bool
}

// sequence checks the children of an element-only element against an
// XML Schema sequence of elements that occur at most once: right names,
// in order, required ones present, nothing else, no non-whitespace text.
func sequence(el wire.Element, items ...seq) (map[string]wire.Element, error) {
	if strings.Trim(el.Text(), " \t\r\n") != "" {
		return nil, badRequest("unexpected text")
	}
	out := make(map[string]wire.Element, len(items))
	i := 0
	for _, c := range el.Children() {
		for i < len(items) && c.Start.Name != name(items[i].local) {
			if items[i].required {
				return nil, badRequest("missing or misplaced " + items[i].local)
			}
			i++
		}
		if i == len(items) {
			return nil, badRequest("unexpected element")
		}
		out[items[i].local] = c
		i++
	}
	for ; i < len(items); i++ {
		if items[i].required {
			return nil, badRequest("missing " + items[i].local)
		}
	}
	return out, nil
}

// textOnly returns the character data of an element that must not have
// child elements.
func textOnly(el wire.Element) (string, error) {
	if len(el.Children()) > 0 {
		return "", badRequest(el.Start.Name.Local + " must contain only text")
	}
	return el.Text(), nil
}

// jsonText returns the text of a JSON-bearing element whose media-type
// attribute, required when mediaType is set, must be application/json.
func jsonText(el wire.Element, mediaType bool) (string, error) {
	if mediaType {
		if mt, ok := el.AttrValue("media-type"); !ok || mt != MediaTypeJSON {
			return "", badRequest("media-type must be application/json")
		}
	}
	return textOnly(el)
}

// parseHashContainer reads a hashContainer: exactly one XEP-0300 <hash/>,
// by wire.ParseHash.
func parseHashContainer(el wire.Element) ([32]byte, error) {
	kids := el.Children()
	if len(kids) != 1 || strings.Trim(el.Text(), " \t\r\n") != "" {
		return [32]byte{}, badRequest("manifest-hash must hold one hash")
	}
	h, err := wire.ParseHash(kids[0])
	if err != nil {
		return [32]byte{}, badRequest("manifest " + err.Error())
	}
	return h, nil
}

func hashContainer(local string, sum [32]byte) xml.TokenReader {
	return wire.Elem(name(local), nil, wire.Hash(sum).TokenReader())
}

func parseTaskRef(el wire.Element, local string) (string, error) {
	if err := checkEmpty(el, local); err != nil {
		return "", err
	}
	return idAttr(el, "task-id")
}

func parseAck(el wire.Element, local string) (string, int64, error) {
	if err := checkEmpty(el, local); err != nil {
		return "", 0, err
	}
	id, err := idAttr(el, "task-id")
	if err != nil {
		return "", 0, err
	}
	rev, err := revisionAttr(el, "revision")
	return id, rev, err
}

func ackReader(local, taskID string, rev int64) xml.TokenReader {
	return wire.Elem(name(local), []xml.Attr{
		wire.Attr("task-id", taskID),
		wire.Attr("revision", strconv.FormatInt(rev, 10)),
	})
}
