package monitor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/wanlab/wanlab/internal/monitor/core"
)

// Webhook posts alerts as JSON to a URL, one at a time, from a bounded
// queue: a slow or dead receiver never holds up the measurements.
type Webhook struct {
	url    string
	queue  chan webhookMessage
	client *http.Client
	logf   func(string, ...any)
}

type webhookMessage struct {
	Status string     `json:"status"` // firing or resolved
	Alert  core.Alert `json:"alert"`
}

// NewWebhook starts posting to url until ctx ends; nil for no URL.
func NewWebhook(ctx context.Context, url string, logf func(string, ...any)) *Webhook {
	if url == "" {
		return nil
	}
	w := &Webhook{url: url, queue: make(chan webhookMessage, 256), client: &http.Client{Timeout: 10 * time.Second}, logf: logf}
	go w.run(ctx)
	return w
}

// Send queues an alert; if the queue is full it is reported and left out.
func (w *Webhook) Send(status string, a core.Alert) {
	if w == nil {
		return
	}
	select {
	case w.queue <- webhookMessage{status, a}:
	default:
		w.logf("webhook %s: queue full: alert %s on %s->%s not posted", w.url, a.Rule, a.Src, a.Dst)
	}
}

func (w *Webhook) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-w.queue:
			if err := w.post(ctx, m); err != nil {
				w.logf("webhook: %v", err)
			}
		}
	}
}

func (w *Webhook) post(ctx context.Context, m webhookMessage) error {
	body, _ := json.Marshal(m)
	var err error
	for try := range 3 {
		if try > 0 {
			time.Sleep(time.Duration(try) * 2 * time.Second)
		}
		req, rerr := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
		if rerr != nil {
			return rerr
		}
		req.Header.Set("Content-Type", "application/json")
		resp, perr := w.client.Do(req)
		if perr != nil {
			err = perr
			continue
		}
		resp.Body.Close()
		if resp.StatusCode < 300 {
			return nil
		}
		err = fmt.Errorf("%s answered %s", w.url, resp.Status)
	}
	return fmt.Errorf("posting alert %s on %s->%s: %w", m.Alert.Rule, m.Alert.Src, m.Alert.Dst, err)
}
