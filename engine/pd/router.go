package pd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
)

// Instance is one engine behind the router.
type Instance struct {
	Role string `json:"role"` // "prefill" or "decode"
	URL  string `json:"url"`  // base URL, e.g. http://127.0.0.1:41234
}

// Router sends each generation request to a prefill instance with
// max_tokens 1 and then to a decode instance, round-robin over each pool.
// It is safe for concurrent use.
type Router struct {
	Prefill, Decode []string // base URLs
	Client          *http.Client
	nextP, nextD    atomic.Uint64
}

// maxBody bounds request bodies, as the engine does.
const maxBody = 8 << 20

func (rt *Router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/completions", "/v1/chat/completions":
		rt.generate(w, r)
	case "/pd/instances":
		rt.instances(w)
	case "/metrics":
		http.Error(w, "the P/D router has no metrics of its own: read each instance's /metrics (GET /pd/instances)", http.StatusNotFound)
	default:
		rt.forward(w, r, rt.Decode[0], nil)
	}
}

func (rt *Router) instances(w http.ResponseWriter) {
	var list []Instance
	for _, u := range rt.Prefill {
		list = append(list, Instance{Role: "prefill", URL: u})
	}
	for _, u := range rt.Decode {
		list = append(list, Instance{Role: "decode", URL: u})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"instances": list})
}

// generate is the two-step P/D request.
func (rt *Router) generate(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil || len(body) > maxBody {
		http.Error(w, "request body unreadable or over 8 MiB", http.StatusRequestEntityTooLarge)
		return
	}
	pre, err := prefillBody(body)
	if err != nil {
		// Not JSON the router can rewrite: the decode instance answers with
		// the engine's own 400.
		rt.forward(w, r, rt.pick(rt.Decode, &rt.nextD), body)
		return
	}
	p := rt.pick(rt.Prefill, &rt.nextP)
	resp, err := rt.post(r, p, pre)
	if err != nil {
		http.Error(w, fmt.Sprintf("prefill instance %s: %v", p, err), http.StatusBadGateway)
		return
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		copyResponse(w, resp) // the prefill instance's refusal (400, 429...) is the client's
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	rt.forward(w, r, rt.pick(rt.Decode, &rt.nextD), body)
}

// prefillBody is the request as the prefill instance gets it: one token,
// not streamed, with no lower bound on the output.
func prefillBody(body []byte) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	m["max_tokens"] = 1
	m["stream"] = false
	for _, k := range []string{"max_completion_tokens", "stream_options", "min_tokens", "n"} {
		delete(m, k)
	}
	return json.Marshal(m)
}

func (rt *Router) pick(pool []string, next *atomic.Uint64) string {
	return pool[(next.Add(1)-1)%uint64(len(pool))]
}

func (rt *Router) post(r *http.Request, base string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, base+r.URL.Path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	copyHeaders(req.Header, r.Header)
	return rt.Client.Do(req)
}

// forward sends r (with body, when not nil) to base and streams the answer
// back, flushing as it arrives so SSE events keep their timing.
func (rt *Router) forward(w http.ResponseWriter, r *http.Request, base string, body []byte) {
	var rd io.Reader = r.Body
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, base+r.URL.RequestURI(), rd)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	copyHeaders(req.Header, r.Header)
	resp, err := rt.Client.Do(req)
	if err != nil {
		http.Error(w, fmt.Sprintf("decode instance %s: %v", base, err), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	copyResponse(w, resp)
}

func copyHeaders(dst, src http.Header) {
	for k, vs := range src {
		if k == "Content-Length" || k == "Connection" {
			continue
		}
		dst[k] = append([]string(nil), vs...)
	}
}

// copyResponse relays status, headers and body, flushing each read.
func copyResponse(w http.ResponseWriter, resp *http.Response) {
	copyHeaders(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	f, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if f != nil {
				f.Flush()
			}
		}
		if err != nil {
			return
		}
	}
}
