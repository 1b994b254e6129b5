package measure

// CPUResult is CPU use during a test (a throughput test, a transfer's
// leg) in percent of one core: by each host's CPU cgroup as a whole (-1
// when unknown) and by its agent.
type CPUResult struct {
	SenderHost    float64 `json:"sender_host"`
	SenderAgent   float64 `json:"sender_agent"`
	ReceiverHost  float64 `json:"receiver_host"`
	ReceiverAgent float64 `json:"receiver_agent"`
}
