package adhoc

import (
	"encoding/xml"
	"errors"

	"agentgw/wire"
)

// XEP-0050 actions (§4.1).
const (
	ActionExecute  = "execute"
	ActionNext     = "next"
	ActionPrev     = "prev"
	ActionComplete = "complete"
	ActionCancel   = "cancel"
)

// XEP-0050 statuses (§4.1).
const (
	StatusExecuting = "executing"
	StatusCompleted = "completed"
	StatusCanceled  = "canceled"
)

// XEP-0050 note types (§4.3).
const (
	NoteInfo  = "info"
	NoteWarn  = "warn"
	NoteError = "error"
)

// Name is the <command/> payload name.
var Name = xml.Name{Space: NS, Local: "command"}

// Command is the XEP-0050 <command/> element: a request (Action, and the
// submitted Form) or a response (Status, Actions, Notes and a Form).
type Command struct {
	// Node names the command.
	Node string
	// SessionID identifies the command session; the responder assigns it
	// in its first response.
	SessionID string
	// Action is the requested action; empty means execute.
	Action string
	// Status is the response's status.
	Status string
	// Actions are the actions the requester may take next.
	Actions *Actions
	// Notes are the response's notes, written before the form.
	Notes []Note
	// Form is the form carried, if any.
	Form *Form
}

// Actions is the XEP-0050 <actions/> element.
type Actions struct {
	// Execute is the default action (the execute attribute), if any.
	Execute string
	// Prev, Next and Complete are the allowed actions.
	Prev, Next, Complete bool
}

// Note is the XEP-0050 <note/> element.
type Note struct {
	// Type is NoteInfo, NoteWarn or NoteError; empty means info.
	Type string
	// Text is the note's text.
	Text string
}

// TokenReader implements xmlstream.Marshaler.
func (c Command) TokenReader() xml.TokenReader {
	attrs := []xml.Attr{wire.Attr("node", c.Node)}
	if c.SessionID != "" {
		attrs = append(attrs, wire.Attr("sessionid", c.SessionID))
	}
	if c.Action != "" {
		attrs = append(attrs, wire.Attr("action", c.Action))
	}
	if c.Status != "" {
		attrs = append(attrs, wire.Attr("status", c.Status))
	}
	var kids []xml.TokenReader
	if a := c.Actions; a != nil {
		var aa []xml.Attr
		if a.Execute != "" {
			aa = []xml.Attr{wire.Attr("execute", a.Execute)}
		}
		var acts []xml.TokenReader
		for _, x := range []struct {
			on   bool
			name string
		}{{a.Prev, ActionPrev}, {a.Next, ActionNext}, {a.Complete, ActionComplete}} {
			if x.on {
				acts = append(acts, wire.Elem(xml.Name{Space: NS, Local: x.name}, nil))
			}
		}
		kids = append(kids, wire.Elem(xml.Name{Space: NS, Local: "actions"}, aa, acts...))
	}
	for _, n := range c.Notes {
		var na []xml.Attr
		if n.Type != "" {
			na = []xml.Attr{wire.Attr("type", n.Type)}
		}
		kids = append(kids, wire.Elem(xml.Name{Space: NS, Local: "note"}, na, wire.Text(n.Text)))
	}
	if c.Form != nil {
		kids = append(kids, c.Form.TokenReader())
	}
	return wire.Elem(Name, attrs, kids...)
}

// Errors of ParseCommand.
var (
	ErrMalformedCommand = errors.New("adhoc: malformed command")
	ErrMalformedAction  = errors.New("adhoc: unknown action")
)

// ParseCommand reads a <command/>. A missing node, a malformed form or
// note is ErrMalformedCommand; an action XEP-0050 does not define is
// ErrMalformedAction. Children of other namespaces are ignored.
func ParseCommand(el wire.Element) (Command, error) {
	var c Command
	if el.Start.Name != Name {
		return c, ErrMalformedCommand
	}
	c.Node, _ = el.AttrValue("node")
	if c.Node == "" {
		return c, ErrMalformedCommand
	}
	c.SessionID, _ = el.AttrValue("sessionid")
	c.Status, _ = el.AttrValue("status")
	c.Action, _ = el.AttrValue("action")
	switch c.Action {
	case "", ActionExecute, ActionNext, ActionPrev, ActionComplete, ActionCancel:
	default:
		return c, ErrMalformedAction
	}
	for _, k := range el.Children() {
		switch k.Start.Name {
		case xml.Name{Space: wire.NSData, Local: "x"}:
			if c.Form != nil {
				return c, ErrMalformedCommand
			}
			f, err := ParseForm(k)
			if err != nil {
				return c, ErrMalformedCommand
			}
			c.Form = &f
		case xml.Name{Space: NS, Local: "note"}:
			if len(k.Children()) > 0 {
				return c, ErrMalformedCommand
			}
			typ, _ := k.AttrValue("type")
			c.Notes = append(c.Notes, Note{Type: typ, Text: k.Text()})
		case xml.Name{Space: NS, Local: "actions"}:
			a := &Actions{}
			a.Execute, _ = k.AttrValue("execute")
			for _, x := range k.Children() {
				switch x.Start.Name.Local {
				case ActionPrev:
					a.Prev = true
				case ActionNext:
					a.Next = true
				case ActionComplete:
					a.Complete = true
				default:
					return c, ErrMalformedCommand
				}
			}
			c.Actions = a
		}
	}
	return c, nil
}
