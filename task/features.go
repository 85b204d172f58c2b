package task

import "agentgw/manifest"

// The payloads of the IQs a task endpoint answers ("Task Execution"); the
// gateway's surface list routes them.
var (
	NameInvoke       = name("invoke")
	NameTaskState    = name("task-state-request")
	NameTaskResult   = name("task-result-request")
	NameProvideInput = name("provide-input")
	NameCancel       = name("cancel")
)

// Implemented lists the optional task features this package implements,
// for api.Service.TaskFeatures: a tool node may advertise each of them
// when its tool declares it.
var Implemented = []string{FeatureProgress, FeatureCancel, FeatureInput}

// ToolFeatures returns the optional task features tool declares in its
// urn:xmpp:agent-api:0 extension object, in a fixed order. These are the
// reports and commands the Machine accepts for its tasks.
func ToolFeatures(tool *manifest.Tool) []string {
	var out []string
	if tool.Ext.SupportsProgress {
		out = append(out, FeatureProgress)
	}
	if tool.Ext.SupportsCancellation {
		out = append(out, FeatureCancel)
	}
	if tool.Ext.SupportsInput {
		out = append(out, FeatureInput)
	}
	return out
}

// EndpointFeatures returns the task features of an endpoint that executes
// the tools of m: the core namespace and every optional feature some tool
// declares ("Endpoint Information"; a tool's declaration cannot override a
// feature its endpoint does not advertise).
func EndpointFeatures(m *manifest.Manifest) []string {
	var progress, cancel, input bool
	for i := range m.Tools {
		e := m.Tools[i].Ext
		progress = progress || e.SupportsProgress
		cancel = cancel || e.SupportsCancellation
		input = input || e.SupportsInput
	}
	out := []string{NS}
	if progress {
		out = append(out, FeatureProgress)
	}
	if cancel {
		out = append(out, FeatureCancel)
	}
	if input {
		out = append(out, FeatureInput)
	}
	return out
}
