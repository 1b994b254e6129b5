package testbed

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/linkemu"
	"github.com/wanlab/wanlab/internal/pcapng"
	"github.com/wanlab/wanlab/internal/topology"
)

// A capture is made inside the engine, where the link model decides: the
// daemon streams it as pcapng to whoever asked, packets the model dropped
// included, each with a comment saying why.

// dropComments are the comments of packets the model dropped.
var dropComments = map[string]string{
	linkemu.ByQueue: "wanlab: dropped by the link model: queue full",
	linkemu.ByLoss:  "wanlab: dropped by the link model: loss",
	linkemu.ByDown:  "wanlab: dropped by the link model: link down",
	linkemu.ByMTU:   "wanlab: dropped by the link model: larger than the MTU",
	linkemu.ByTTL:   "wanlab: dropped by the link model: TTL expired at a router",
}

// Capture trailers: what the stream held once it ended.
const (
	trailerPackets = "Wanlab-Capture-Packets"
	trailerDropped = "Wanlab-Capture-Dropped"
	trailerLost    = "Wanlab-Capture-Lost"
	headerID       = "Wanlab-Capture-Id"
)

// captures are the daemon's running captures, by id, to stop them.
type captures struct {
	mu   sync.Mutex
	stop map[string]chan struct{}
}

func (c *captures) add() (string, chan struct{}) {
	var b [8]byte
	rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	ch := make(chan struct{})
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stop == nil {
		c.stop = map[string]chan struct{}{}
	}
	c.stop[id] = ch
	return id, ch
}

func (c *captures) end(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.stop[id]
	if ok {
		close(ch)
		delete(c.stop, id)
	}
	return ok
}

// captureLinks streams a capture of the directions select names:
// ?select=a->b&snaplen=N&count=N.
func (d *daemon) captureLinks(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d.setMu.Lock()
	dirs := append([]topology.Direction(nil), d.state.Dirs...)
	d.setMu.Unlock()
	idx, err := topology.Select(dirs, q.Get("select"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	snaplen, count := 0, 0
	for _, p := range []struct {
		key  string
		into *int
	}{{"snaplen", &snaplen}, {"count", &count}} {
		if v := q.Get(p.key); v != "" {
			if *p.into, err = strconv.Atoi(v); err != nil || *p.into < 0 {
				http.Error(w, fmt.Sprintf("%s=%q: give a whole number", p.key, v), http.StatusBadRequest)
				return
			}
		}
	}
	if snaplen == 0 {
		for _, i := range idx {
			snaplen = max(snaplen, dirs[i].Config.MTU)
		}
	}
	c, err := d.engine.StartCapture(idx, snaplen)
	if err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	defer d.engine.StopCapture(c)
	id, stop := d.captures.add()
	defer d.captures.end(id)
	w.Header().Set("Content-Type", "application/x-pcapng")
	w.Header().Set(headerID, id)
	w.Header().Set("Trailer", trailerPackets+", "+trailerDropped+", "+trailerLost)
	pw, err := pcapng.NewWriter(w, "wanlab (test-bed "+d.name+")")
	iface := map[int]int{}
	for _, i := range idx {
		if err == nil {
			iface[i], err = pw.AddInterface(dirs[i].Name, snaplen)
		}
	}
	if err != nil {
		return
	}
	flusher, _ := w.(http.Flusher)
	var packets, dropped int
	done := false
	write := func(p linkemu.CapturedPacket) error {
		if done {
			return nil
		}
		pkt := pcapng.Packet{Interface: iface[p.Dir], Time: p.At, Data: p.Data, OrigLen: p.OrigLen, Comment: dropComments[p.Reason]}
		if p.Reason != linkemu.Passed {
			dropped++
		}
		packets++
		done = count > 0 && packets >= count
		return pw.WritePacket(pkt)
	}
	log.Printf("capture %s of %s: started", id, q.Get("select"))
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !done && err == nil {
		select {
		case <-tick.C:
		case <-stop:
			done = true
		case <-r.Context().Done():
			done = true
		}
		if err = c.Read(write); err == nil {
			err = pw.Flush()
		}
		if flusher != nil && err == nil {
			flusher.Flush()
		}
		if d.stopping.Load() {
			done = true
		}
	}
	w.Header().Set(trailerPackets, strconv.Itoa(packets))
	w.Header().Set(trailerDropped, strconv.Itoa(dropped))
	w.Header().Set(trailerLost, strconv.FormatUint(c.Lost(), 10))
	log.Printf("capture %s of %s: %d packets (%d dropped by the model, %d missed), %v", id, q.Get("select"), packets, dropped, c.Lost(), err)
}

func (d *daemon) stopCapture(w http.ResponseWriter, r *http.Request) {
	if !d.captures.end(r.URL.Query().Get("id")) {
		http.Error(w, "no such capture", http.StatusNotFound)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// CaptureOptions bound a capture: packets (0: until stopped) and bytes of each.
type CaptureOptions struct {
	Count, Snaplen int
}

// CaptureResult is what a capture held.
type CaptureResult struct {
	Packets int `json:"packets"`
	// Dropped are those the link model dropped (in the file, with a comment).
	Dropped int `json:"dropped_by_model"`
	// Lost are packets the capture missed because it fell behind.
	Lost int `json:"missed"`
	// Bytes is the size of what was written.
	Bytes int64 `json:"bytes"`
}

// Capture streams a pcapng capture of the directions selector names on
// test-bed name into w, until o.Count packets, ctx is done (then it ends
// the file cleanly) or w fails (then it stops the capture and returns the
// error, with what was written kept).
func Capture(ctx context.Context, name, selector string, o CaptureOptions, w io.Writer) (CaptureResult, error) {
	var res CaptureResult
	if daemonPID(name) == 0 {
		if _, err := ReadState(name); err != nil {
			return res, err
		}
		return res, fmt.Errorf("test-bed %q is not running (its daemon is gone): wanlab testbed down %s", name, name)
	}
	q := url.Values{"select": {selector}}
	if o.Count > 0 {
		q.Set("count", strconv.Itoa(o.Count))
	}
	if o.Snaplen > 0 {
		q.Set("snaplen", strconv.Itoa(o.Snaplen))
	}
	client := NewStatsReader(name).client
	client.Timeout = 0 // a capture lasts as long as it is asked to
	resp, err := client.Get("http://engine/capture?" + q.Encode())
	if err != nil {
		return res, fmt.Errorf("asking the engine of %q for a capture: %w", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return res, fmt.Errorf("test-bed %q: %s", name, strings.TrimSpace(string(msg)))
	}
	stop := func() {
		r, err := client.Post("http://engine/capture/stop?id="+url.QueryEscape(resp.Header.Get(headerID)), "", nil)
		if err == nil {
			r.Body.Close()
		}
	}
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		select {
		case <-ctx.Done():
			stop()
		case <-stopped:
		}
	}()
	out := &recordingWriter{w: w}
	res.Bytes, err = io.Copy(out, resp.Body)
	switch {
	case out.err != nil:
		stop()
		return res, out.err
	case err != nil:
		return res, fmt.Errorf("reading the capture of %q: %w", name, err)
	}
	res.Packets, _ = strconv.Atoi(resp.Trailer.Get(trailerPackets))
	res.Dropped, _ = strconv.Atoi(resp.Trailer.Get(trailerDropped))
	res.Lost, _ = strconv.Atoi(resp.Trailer.Get(trailerLost))
	return res, nil
}

// recordingWriter keeps its writer's error, to tell it from the reader's.
type recordingWriter struct {
	w   io.Writer
	err error
}

func (r *recordingWriter) Write(p []byte) (int, error) {
	n, err := r.w.Write(p)
	if err != nil {
		r.err = err
	}
	return n, err
}

// Capture captures the test-bed's links (backend.Capturer).
func (b *Bed) Capture(ctx context.Context, selector string, snaplen, count int, w io.Writer) (packets, dropped, missed int, err error) {
	res, err := Capture(ctx, b.state.Name, selector, CaptureOptions{Count: count, Snaplen: snaplen}, w)
	return res.Packets, res.Dropped, res.Lost, err
}

var _ backend.Capturer = (*Bed)(nil)
