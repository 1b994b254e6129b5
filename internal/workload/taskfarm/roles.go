package taskfarm

import (
	"context"
	"fmt"

	"github.com/wanlab/wanlab/internal/workload/kind"
)

// The farm's roles, by their names on the wire.
const (
	RoleMaster  = "taskfarm-master"  // MasterSpec
	RoleWorkers = "taskfarm-workers" // WorkerSpec
)

// roles are the farm's roles in agents: the master, which listens and
// reports every task as a job, and one host's workers.
var roles = []kind.Role{
	kind.NewRole(RoleMaster, runMaster),
	kind.NewRole(RoleWorkers, runWorkers),
}

// runMaster opens the master's port, says where, and hands out the tasks;
// its summary is its Result.
func runMaster(ctx context.Context, env kind.RoleEnv, s *MasterSpec) (any, error) {
	m, err := Listen(*s, env.Limits(), env.Test())
	if err != nil {
		return nil, err
	}
	if err := env.Listening(m.Port()); err != nil {
		m.ln.Close()
		return nil, fmt.Errorf("saying where the master listens: %w", err)
	}
	return m.Run(ctx, env.Job), nil
}

// runWorkers runs one host's workers until the master has no more tasks;
// its summary is their WorkerResult. No task may be longer than the
// caller's longest duration.
func runWorkers(ctx context.Context, env kind.RoleEnv, s *WorkerSpec) (any, error) {
	return RunWorkers(ctx, *s, env.Limits().MaxDuration), nil
}
