package result

import (
	"encoding/json"
	"reflect"
	"strings"
	"time"
)

// View returns stored results res with every figure in c's time, for
// tables, reports, charts and comparisons: res itself under the wall clock
// (or when it is already a view), else a converted deep copy. The rule is results.json's
// own naming: a key ending in _s holds seconds (multiplied by the speed-up,
// a summary or histogram under it wholly but for its counts), one ending in
// _per_s a rate (divided), a workload's "rate" is requests per second, and
// an SLO string is re-read and converted. The server's start-up phases use
// the engine's start-up speed-up. The trace block stays as recorded (its
// times are the trace's own), so do the run names (a sweep names its levels
// in its own clock) and warnings' text.
func (c Clock) View(res *Results) *Results {
	if res == nil || !c.Modelled() || (res.Clock != nil && res.Clock.shown) {
		return res // wall figures are what is stored; a view is converted already
	}
	out := cloneResults(res)
	for i := range out.Runs {
		out.Runs[i].Modelled = nil // the view is the modelled figures
	}
	out.MaxRateModelled = nil
	sc := scaler{k: c.factor()}
	sc.walk(reflect.ValueOf(out).Elem(), "")
	if st := out.Server.Startup; st != nil { // left out above: its own speed-up
		scaler{k: c.startupFactor()}.walk(reflect.ValueOf(st).Elem(), "")
	}
	shown := c
	shown.shown = true
	out.Clock = &shown
	return out
}

// Shown is res in the clock it was recorded in: what every report shows.
func Shown(res *Results) *Results {
	if res == nil {
		return nil
	}
	return ClockOf(res).View(res)
}

// ViewRecords returns recs in c's time (the same rule as View; a record's
// start moves with its run's start, so timelines stretch too); recs itself
// under the wall clock. runs give the runs' starts.
func (c Clock) ViewRecords(recs []Record, runs []Run) []Record {
	if !c.Modelled() || len(recs) == 0 {
		return recs
	}
	starts := make(map[string]time.Time, len(runs))
	for _, r := range runs {
		starts[r.Name] = r.StartedAt
	}
	sc := scaler{k: c.factor()}
	out := make([]Record, len(recs))
	for i := range recs {
		out[i] = recs[i]
		r := &out[i]
		if r.Events != nil {
			r.Events = append(Events(nil), recs[i].Events...)
			for j := range r.Events {
				r.Events[j][0] *= sc.k
			}
		}
		if r.Engine != nil {
			e := *r.Engine
			r.Engine = &e
		}
		if t0, ok := starts[r.Run]; ok && !t0.IsZero() && !r.Start.IsZero() {
			r.Start = t0.Add(time.Duration(float64(r.Start.Sub(t0)) * sc.k))
		}
		sc.walk(reflect.ValueOf(r).Elem(), "")
	}
	return out
}

// Annotate records c in res (results.json "clock") and, under the
// modelled clock, each run's figures and the max-rate answer in modelled
// time beside the wall-clock ones ("modelled", "max_rate_modelled").
func (c Clock) Annotate(res *Results) {
	cc := c
	cc.shown = false
	res.Clock = &cc
	if !c.Modelled() {
		return
	}
	v := c.View(res)
	for i := range res.Runs {
		res.Runs[i].Modelled = modelledRun(&v.Runs[i])
	}
	res.MaxRateModelled = v.MaxRate
}

// modelledRun is the part of a viewed run that the modelled block repeats:
// every figure with a time in it.
func modelledRun(r *Run) *ModelledRun {
	e := r.Engine
	e.Reconciliation, e.Source, e.Replicas = nil, nil, nil
	return &ModelledRun{DurationS: r.DurationS, RatePerS: r.Workload.Rate, WorkloadDurationS: r.Workload.DurationS,
		Throughput: r.Throughput, Client: r.Client, Engine: e, Rate: r.Rate, Goodput: r.Goodput, Steady: r.Steady, Saturation: r.Saturation}
}

// ModelledRun repeats a run's figures in the emulated hardware's time
// (Clock), under the same keys as the run's own wall-clock ones.
type ModelledRun struct {
	DurationS         float64     `json:"duration_s"`
	RatePerS          float64     `json:"workload_rate_per_s,omitempty"` // the workload's --rate
	WorkloadDurationS float64     `json:"workload_duration_s,omitempty"` // the workload's --duration
	Throughput        Throughput  `json:"throughput"`
	Client            ClientStats `json:"client"`
	Engine            EngineStats `json:"engine"`
	Rate              *RateStats  `json:"rate,omitempty"`
	Goodput           *Goodput    `json:"goodput,omitempty"`
	Steady            *Steady     `json:"steady_state,omitempty"`
	Saturation        *Saturation `json:"saturation,omitempty"`
}

// cloneResults is a deep copy of res (through its JSON form, which is all
// of it).
func cloneResults(res *Results) *Results {
	b, err := json.Marshal(res)
	if err != nil {
		panic("result: cloning results: " + err.Error()) // plain data always marshals
	}
	var out Results
	if err := json.Unmarshal(b, &out); err != nil {
		panic("result: cloning results: " + err.Error())
	}
	if res.Clock != nil {
		out.Clock.shown = res.Clock.shown
	}
	return &out
}

// scaler converts a value in place by the key-name rule of View: k is
// the shown seconds per wall-clock second.
type scaler struct{ k float64 }

// keepKeys are blocks left as recorded (start-up: View scales it apart).
var keepKeys = map[string]bool{"trace": true, "manifest": true, "bundled": true, "clock": true, "startup": true, "modelled": true, "max_rate_modelled": true}

// walk converts v, found under the JSON key key.
func (s scaler) walk(v reflect.Value, key string) {
	switch {
	case keepKeys[key]:
		return
	case strings.HasSuffix(key, "_per_s"):
		s.scale(v, 1/s.k)
		return
	case strings.HasSuffix(key, "_s"):
		s.scale(v, s.k)
		return
	case key == "rate" && v.Kind() == reflect.Float64:
		v.SetFloat(v.Float() / s.k)
		return
	case key == "slo" && v.Kind() == reflect.String:
		if slo, err := ParseSLO(v.String()); err == nil {
			v.SetString(Clock{Name: ClockModelled, Speedup: s.k}.SLOToModelled(slo).String())
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			s.walk(v.Elem(), "")
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			s.walk(v.Index(i), "")
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && name == "" {
				s.walk(v.Field(i), "")
				continue
			}
			if name == "" || name == "-" {
				continue
			}
			s.walk(v.Field(i), name)
		}
	}
}

// scale multiplies every float of v by f: a number, or each value of a
// summary, histogram or slice of them, their counts left alone.
func (s scaler) scale(v reflect.Value, f float64) {
	switch v.Kind() {
	case reflect.Float64:
		v.SetFloat(v.Float() * f)
	case reflect.Pointer:
		if !v.IsNil() {
			s.scale(v.Elem(), f)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			s.scale(v.Index(i), f)
		}
	case reflect.Map: // a histogram's quantile_bounds: values are not addressable, so copied back
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			s.scale(e, f)
			v.SetMapIndex(k, e)
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			if t.Field(i).IsExported() && name != "count" && name != "n" {
				s.scale(v.Field(i), f)
			}
		}
	}
}

// ViewMaxRate is m (wall-clock rates) in c's time; m itself under the wall
// clock.
func (c Clock) ViewMaxRate(m *MaxRate) *MaxRate {
	if m == nil || !c.Modelled() {
		return m
	}
	v := *m
	scaler{k: c.factor()}.walk(reflect.ValueOf(&v).Elem(), "")
	return &v
}
