// Package metrics keeps agentgw's counters, gauges and histograms and
// writes them in the Prometheus text exposition format (version 0.0.4), for
// the optional [metrics] listener. It has no dependencies beyond the
// standard library: an increment is one atomic add, so the hooks cost
// nothing worth measuring when nobody scrapes, and nothing listens unless
// [metrics] listen is set.
//
// The catalog (catalog.go) is the whole list of metrics; every label value
// comes from a small fixed set, never from what a peer sends, so the number
// of series is bounded.
package metrics

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// maxSeries bounds the label combinations of one metric; past it new
// combinations are counted under the value "other" for every label.
const maxSeries = 256

// metric is one family in the exposition.
type metric interface {
	write(w io.Writer)
}

// Counter is a family of monotonic counters, one per label combination.
type Counter struct {
	name, help string
	labels     []string
	series     seriesMap[*atomic.Uint64]
}

// NewCounter returns a counter family with the given label names.
func NewCounter(name, help string, labels ...string) *Counter {
	return &Counter{name: name, help: help, labels: labels}
}

// Add adds n to the series of the label values (one per label name).
func (c *Counter) Add(n uint64, values ...string) {
	c.seriesOf(values).Add(n)
}

// seriesOf is the series of the label values, made if it is new.
func (c *Counter) seriesOf(values []string) *atomic.Uint64 {
	return c.series.get(values, func() *atomic.Uint64 { return new(atomic.Uint64) })
}

// Inc adds one.
func (c *Counter) Inc(values ...string) { c.Add(1, values...) }

// Value returns the series' count, for tests.
func (c *Counter) Value(values ...string) uint64 {
	return c.series.get(values, func() *atomic.Uint64 { return new(atomic.Uint64) }).Load()
}

// WriteText writes the family in the text format.
func (c *Counter) WriteText(w io.Writer) { c.write(w) }

func (c *Counter) write(w io.Writer) {
	header(w, c.name, c.help, "counter")
	if len(c.labels) == 0 {
		c.Add(0) // an unlabelled counter is 0 before its first event
	}
	c.series.each(func(values []string, v *atomic.Uint64) {
		fmt.Fprintf(w, "%s%s %d\n", c.name, labelText(c.labels, values, "", ""), v.Load())
	})
}

// Histogram is a family of histograms with fixed upper bounds.
type Histogram struct {
	name, help string
	labels     []string
	bounds     []float64
	series     seriesMap[*histSeries]
}

type histSeries struct {
	buckets []atomic.Uint64 // one per bound, not cumulative; +Inf is count
	count   atomic.Uint64
	sumBits atomic.Uint64 // float64 bits of the sum
}

// NewHistogram returns a histogram family; bounds are the bucket upper
// bounds, ascending.
func NewHistogram(name, help string, bounds []float64, labels ...string) *Histogram {
	return &Histogram{name: name, help: help, labels: labels, bounds: bounds}
}

// Observe records v in the series of the label values.
func (h *Histogram) Observe(v float64, values ...string) {
	h.observe(h.seriesOf(values), v)
}

// seriesOf is the series of the label values, made if it is new.
func (h *Histogram) seriesOf(values []string) *histSeries {
	return h.series.get(values, func() *histSeries { return &histSeries{buckets: make([]atomic.Uint64, len(h.bounds))} })
}

// observe records v in s, a series of h.
func (h *Histogram) observe(s *histSeries, v float64) {
	if i, _ := slices.BinarySearch(h.bounds, v); i < len(h.bounds) {
		s.buckets[i].Add(1)
	}
	s.count.Add(1)
	for {
		old := s.sumBits.Load()
		if s.sumBits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			break
		}
	}
}

// Count returns the observations of the series, for tests.
func (h *Histogram) Count(values ...string) uint64 {
	return h.series.get(values, func() *histSeries { return &histSeries{buckets: make([]atomic.Uint64, len(h.bounds))} }).count.Load()
}

// WriteText writes the family in the text format.
func (h *Histogram) WriteText(w io.Writer) { h.write(w) }

func (h *Histogram) write(w io.Writer) {
	header(w, h.name, h.help, "histogram")
	if len(h.labels) == 0 {
		h.Count() // an unlabelled histogram is empty before its first event
	}
	h.series.each(func(values []string, s *histSeries) {
		var cum uint64
		for i, b := range h.bounds {
			cum += s.buckets[i].Load()
			fmt.Fprintf(w, "%s_bucket%s %d\n", h.name, labelText(h.labels, values, "le", formatFloat(b)), cum)
		}
		count := s.count.Load()
		fmt.Fprintf(w, "%s_bucket%s %d\n", h.name, labelText(h.labels, values, "le", "+Inf"), count)
		fmt.Fprintf(w, "%s_sum%s %s\n", h.name, labelText(h.labels, values, "", ""), formatFloat(math.Float64frombits(s.sumBits.Load())))
		fmt.Fprintf(w, "%s_count%s %d\n", h.name, labelText(h.labels, values, "", ""), count)
	})
}

// GaugeFunc is a gauge family read at scrape time from a function that
// returns a value per value of its one label (or per "" without a label).
type GaugeFunc struct {
	name, help, label string
	f                 atomic.Pointer[func() map[string]float64]
}

// NewGaugeFunc returns a gauge family with at most one label; it reports
// nothing until Set.
func NewGaugeFunc(name, help, label string) *GaugeFunc {
	return &GaugeFunc{name: name, help: help, label: label}
}

// Set sets the function read at scrape time; nil removes it.
func (g *GaugeFunc) Set(f func() map[string]float64) {
	if f == nil {
		g.f.Store(nil)
		return
	}
	g.f.Store(&f)
}

// WriteText writes the family in the text format.
func (g *GaugeFunc) WriteText(w io.Writer) { g.write(w) }

func (g *GaugeFunc) write(w io.Writer) {
	f := g.f.Load()
	if f == nil {
		return
	}
	vals := (*f)()
	header(w, g.name, g.help, "gauge")
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		labels := ""
		if g.label != "" {
			labels = labelText([]string{g.label}, []string{k}, "", "")
		}
		fmt.Fprintf(w, "%s%s %s\n", g.name, labels, formatFloat(vals[k]))
	}
}

// seriesMap holds the series of a family by their label values.
type seriesMap[T any] struct {
	mu sync.RWMutex
	m  map[string]*entry[T]
}

type entry[T any] struct {
	values []string
	v      T
}

// get returns the series of values, made by mk if it is new. Finding an
// existing series allocates nothing: the key is built on the stack (for
// label values of up to 128 bytes in all) and looked up without a string
// copy; it runs for every stanza.
func (s *seriesMap[T]) get(values []string, mk func() T) T {
	var buf [128]byte
	k := buf[:0]
	for i, v := range values {
		if i > 0 {
			k = append(k, '\xff')
		}
		k = append(k, v...)
	}
	s.mu.RLock()
	e, ok := s.m[string(k)]
	s.mu.RUnlock()
	if ok {
		return e.v
	}
	key := string(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.m[key]; ok {
		return e.v
	}
	if s.m == nil {
		s.m = map[string]*entry[T]{}
	}
	if len(s.m) >= maxSeries {
		other := make([]string, len(values))
		for i := range other {
			other[i] = "other"
		}
		values, key = other, strings.Join(other, "\xff")
		if e, ok := s.m[key]; ok {
			return e.v
		}
	}
	e = &entry[T]{values: slices.Clone(values), v: mk()}
	s.m[key] = e
	return e.v
}

// each calls f for every series, sorted by label values.
func (s *seriesMap[T]) each(f func(values []string, v T)) {
	s.mu.RLock()
	keys := make([]string, 0, len(s.m))
	for k := range s.m {
		keys = append(keys, k)
	}
	entries := make([]*entry[T], 0, len(keys))
	slices.Sort(keys)
	for _, k := range keys {
		entries = append(entries, s.m[k])
	}
	s.mu.RUnlock()
	for _, e := range entries {
		f(e.values, e.v)
	}
}

func header(w io.Writer, name, help, typ string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, escapeHelp(help), name, typ)
}

// labelText formats {a="x",b="y"}, with an extra label when extraName is
// set, or "" without labels.
func labelText(names, values []string, extraName, extraValue string) string {
	if len(names) == 0 && extraName == "" {
		return ""
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		v := ""
		if i < len(values) {
			v = values[i]
		}
		b.WriteString(n + `="` + escapeLabel(v) + `"`)
	}
	if extraName != "" {
		if len(names) > 0 {
			b.WriteByte(',')
		}
		b.WriteString(extraName + `="` + escapeLabel(extraValue) + `"`)
	}
	b.WriteByte('}')
	return b.String()
}

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

func escapeLabel(s string) string { return labelEscaper.Replace(s) }
func escapeHelp(s string) string  { return helpEscaper.Replace(s) }

func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
