package archtest

// The agent runs the roles of the registered workload kinds through the
// registry (issue 32): it finds a role by its name in kinds, and gives it
// a kind.RoleEnv. A kind's package never imports the agent (see never).
func init() {
	allowed["internal/agent"] = append(allowed["internal/agent"], "internal/workload/kind", "internal/workload/kinds")
}
