package twin

import (
	"math"
	"time"
)

// Twin is the fitted path: each way's settings, what they rest on, and
// which part of the campaign they describe.
type Twin struct {
	A       string `json:"a"`
	B       string `json:"b"`
	Forward Fit    `json:"forward"`
	Reverse Fit    `json:"reverse"`
	// Asymmetry compares the two ways (reverse against forward).
	Asymmetry Asymmetry `json:"asymmetry"`
	// Changes are what changed during the campaign; Segment is the part
	// the twin describes (the latest stable one).
	Changes []Change `json:"changes,omitempty"`
	Segment Segment  `json:"segment"`
	// Notes say what holds for the whole twin (the clocks, an even split).
	Notes []string `json:"notes,omitempty"`
}

// Fit is one direction of the twin. The first six fields are the fixed
// shape of wanlab twin --json; Evidence has every value's source and
// interval, Unknown the values that rest on a default.
type Fit struct {
	RateBPS    float64 `json:"rate_bps"`
	DelayS     float64 `json:"delay_s"`
	QueueBytes int64   `json:"queue_bytes"`
	Loss       float64 `json:"loss"`
	LossModel  string  `json:"loss_model"`
	CrossBPS   float64 `json:"cross_bps"`

	JitterS float64 `json:"jitter_s"`
	MTU     int     `json:"mtu"`
	// GE is the Gilbert-Elliott model when LossModel is one.
	GE *GE `json:"gilbert_elliott,omitempty"`
	// Cross is the cross traffic's pattern (nil: none).
	Cross *Cross `json:"cross,omitempty"`
	// QueueBDP is the queue in bandwidth-delay products of the base round trip.
	QueueBDP float64             `json:"queue_bdp"`
	Evidence map[string]Estimate `json:"evidence"`
	// Unknown names the values that rest on a stated default, and why.
	Unknown []Unknown `json:"unknown,omitempty"`
}

// The loss models, as a scenario names them.
const (
	Bernoulli      = "bernoulli"
	GilbertElliott = "gilbert-elliott"
)

// GE is a Gilbert-Elliott loss model in a scenario's terms
// (docs/scenario.md): p good to bad, r bad to good, per packet.
type GE struct {
	P        float64 `json:"p"`
	R        float64 `json:"r"`
	BadLoss  float64 `json:"bad_loss"`
	GoodLoss float64 `json:"good_loss"`
}

// Cross is cross traffic in a scenario's terms: Rate is the offered load
// (for onoff, while on), and CrossBPS the mean.
type Cross struct {
	Pattern string        `json:"pattern"`
	RateBPS float64       `json:"rate_bps"`
	On      time.Duration `json:"on_ns,omitempty"`
	Off     time.Duration `json:"off_ns,omitempty"`
}

// Estimate is a fitted value with its evidence: Low-High is its 95%
// interval (or the spread of what it rests on, as Evidence says).
type Estimate struct {
	Value    float64 `json:"value"`
	Low      float64 `json:"low"`
	High     float64 `json:"high"`
	Evidence string  `json:"evidence"`
	Samples  int     `json:"samples"`
	// AtLeast says the value is a lower bound (High is then unknown).
	AtLeast bool `json:"at_least,omitempty"`
	// Default says the value is a stated default: too little data.
	Default bool `json:"default,omitempty"`
}

// Unknown is a value the campaign could not fit.
type Unknown struct {
	Name string `json:"name"`
	Why  string `json:"why"`
	// Default is what the twin uses instead.
	Default string `json:"default"`
}

// Asymmetry is the reverse direction against the forward one.
type Asymmetry struct {
	// RateRatio is reverse rate / forward rate.
	RateRatio float64 `json:"rate_ratio"`
	// DelayDiffS is reverse delay - forward delay (0 when the delays
	// were split evenly: unknown).
	DelayDiffS float64 `json:"delay_diff_s"`
	Note       string  `json:"note,omitempty"`
}

// Change is something that changed during the campaign.
type Change struct {
	Kind   string    `json:"kind"` // RouteChange or RateStep
	At     time.Time `json:"at"`
	From   string    `json:"from"`
	To     string    `json:"to"`
	Before float64   `json:"before"`
	After  float64   `json:"after"`
	// Evidence says what shows it.
	Evidence string `json:"evidence"`
}

// The kinds of change.
const (
	RouteChange = "route change"
	RateStep    = "rate step"
)

// Segment is the part of the campaign the twin describes.
type Segment struct {
	From time.Time `json:"from,omitzero"`
	To   time.Time `json:"to,omitzero"`
	Why  string    `json:"why"`
}

// Names of the fitted values (Fit.Evidence's keys, Unknown.Name).
const (
	KeyRate   = "rate_bps"
	KeyDelay  = "delay_s"
	KeyJitter = "jitter_s"
	KeyQueue  = "queue_bytes"
	KeyLoss   = "loss"
	KeyModel  = "loss_model"
	KeyCross  = "cross_bps"
	KeyMTU    = "mtu"
	KeySplit  = "delay_split"
)

// Defaults the twin uses for what a campaign does not say.
const (
	DefaultRateBPS = 100e6
	DefaultRTT     = 10 * time.Millisecond
	DefaultMTU     = 1500
	// Queue floors of the scenario's default queue (docs/scenario.md).
	defaultMinQueuePackets = 100
	defaultMinQueueTime    = 10 * time.Millisecond
	minMTU                 = 576
)

// defaultQueue is the scenario's default queue in bytes (docs/scenario.md:
// one BDP of the direction's round trip, at least 100 full packets and 10
// ms at its rate; scenario.DefaultQueue, which the tests compare it with).
func defaultQueue(rateBPS, delayS float64, mtu int) int64 {
	in := func(s float64) int64 { return int64(math.Ceil(rateBPS / 8 * s)) }
	return max(int64(defaultMinQueuePackets*mtu), in(2*delayS), in(defaultMinQueueTime.Seconds()))
}

func (f *Fit) set(key string, e Estimate) {
	if f.Evidence == nil {
		f.Evidence = map[string]Estimate{}
	}
	f.Evidence[key] = e
}

func (f *Fit) unknown(key, why, def string) {
	f.Unknown = append(f.Unknown, Unknown{Name: key, Why: why, Default: def})
}
