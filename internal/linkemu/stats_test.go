package linkemu

import (
	"testing"
	"time"
)

func TestLatenessBetween(t *testing.T) {
	var h latenessHist
	for range 98 {
		h.record(int64(10 * time.Microsecond))
	}
	h.record(int64(1500 * time.Microsecond))
	h.record(int64(40 * time.Millisecond))
	before := h.load().histogram()
	if got := LatenessBetween(before, before); got != (LatenessSummary{}) {
		t.Errorf("between a snapshot and itself: %+v, want nothing", got)
	}
	whole := LatenessBetween(nil, before)
	if sum := h.summary(); whole.Count != sum.Count || whole.P50us != sum.P50us || whole.P99us != sum.P99us || whole.P999us != sum.P999us {
		t.Errorf("from nothing: %+v, want the histogram's own summary %+v", whole, sum)
	}
	if whole.Maxus != 41000 {
		t.Errorf("from nothing: max %v us, want the top bucket's edge 41000", whole.Maxus)
	}

	// After the burst, a calm stretch: only it counts.
	for range 200 {
		h.record(int64(3 * time.Microsecond))
	}
	h.record(int64(150 * time.Microsecond))
	tests := []struct {
		name  string
		want  LatenessSummary
		after []LatenessBucket
	}{
		{"the calm stretch", LatenessSummary{Count: 201, P50us: 4, P99us: 4, P999us: 4, Maxus: 151}, h.load().histogram()},
		{"a bucket that shrank counts nothing", LatenessSummary{Count: 1, P50us: 2, P99us: 2, P999us: 2, Maxus: 2},
			[]LatenessBucket{{UpToUS: 2, Count: 1}, {UpToUS: 11, Count: 5}}},
	}
	for _, tc := range tests {
		if got := LatenessBetween(before, tc.after); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestBucketEdges(t *testing.T) {
	for _, i := range []int{0, 1, 999, fineBuckets - 1, fineBuckets + 2, fineBuckets + 500, fineBuckets + coarseBuckets - 1} {
		if got := bucketOfEdge(bucketEdgeUS(i)); got != i {
			t.Errorf("bucket %d: edge %v us maps back to bucket %d", i, bucketEdgeUS(i), got)
		}
	}
	for _, us := range []float64{-5, 0, 1e9} {
		if i := bucketOfEdge(us); i < 0 || i >= fineBuckets+coarseBuckets {
			t.Errorf("edge %v us: bucket %d out of range", us, i)
		}
	}
}
