package instance

import (
	"strconv"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/gpuvendor"
	"github.com/gpulaunch/gpulaunch/pkg/nodegroup"
)

// GPUIDs is how an instance's visibility variable (CUDA_VISIBLE_DEVICES,
// ROCR_VISIBLE_DEVICES) names its GPUs.
type GPUIDs string

// Ways of naming GPUs to the app.
const (
	// GPUIDsUUID: full UUIDs, immune to any renumbering (the default).
	GPUIDsUUID GPUIDs = "uuid"
	// GPUIDsIndex: integer ordinals as the runtime numbers the GPUs
	// gpulaunch itself can open, for apps that parse the variable as
	// numbers. (Intel's ZE_AFFINITY_MASK takes ordinals only.)
	GPUIDsIndex GPUIDs = "index"
)

// Visibility is which GPUs an instance sees.
type Visibility string

// Visibility modes.
const (
	// VisibleOwn: only the instance's GPUs.
	VisibleOwn Visibility = "own"
	// VisibleAll: every GPU of the allocation, the instance's own first,
	// so CUDA IPC and NCCL P2P between instances keep working.
	VisibleAll Visibility = "all"
)

// OptionsFor are the EnvOptions of an allocation's instances: their GPUs
// named by ids, visible by vis, from the allocation's GPUs and vendor,
// and --ddp's rendezvous (nil without).
func OptionsFor(a binding.Allocation, ids GPUIDs, vis Visibility, rdv *nodegroup.Rendezvous) EnvOptions {
	return EnvOptions{IDs: ids, Visibility: vis, AllGPUs: a.GPUs, Vendor: a.Vendor, Ordinal: a.Ordinal, CardOrdinal: a.CardOrdinal,
		ZEHierarchy: a.ZEHierarchy, Rendezvous: rdv}
}

// EnvOptions shape every instance's environment.
type EnvOptions struct {
	IDs        GPUIDs
	Visibility Visibility
	// AllGPUs are the allocation's GPUs (for VisibleAll).
	AllGPUs []gpu.GPU
	// Vendor made the GPUs: it decides the variables (visibleVars).
	Vendor gpu.Vendor
	// Ordinal and CardOrdinal are the allocation's: the ordinals the
	// runtime gives the devices gpulaunch can open (for GPUIDsIndex and
	// ZE_AFFINITY_MASK), and an Intel tile's card's.
	Ordinal, CardOrdinal map[string]int
	// ZEHierarchy is ZE_FLAT_DEVICE_HIERARCHY's model, which
	// ZE_AFFINITY_MASK is written for.
	ZEHierarchy string
	// Rendezvous, when set (--ddp), adds MASTER_ADDR, MASTER_PORT,
	// TORCHELASTIC_RUN_ID and the rest of torchrun's worker contract
	// (torchrunVars).
	Rendezvous *nodegroup.Rendezvous
}

// replaced are variables gpulaunch sets for each instance; inherited
// values (a leaked RANK, Slurm's vendor lists) are dropped first so they
// cannot contradict the instance's own.
var replaced = []string{
	"LOCAL_RANK", "LOCAL_WORLD_SIZE", "RANK", "WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE",
	"GPULAUNCH_INSTANCE", "GPULAUNCH_NINSTANCES", "GPULAUNCH_GPUS", "GPULAUNCH_CPUS",
}

// Env is the environment of the instance in slot with ranks r:
// the base environment less stale GPU and rank variables, plus the
// instance contract (the README's "Instance environment").
// OMP_NUM_THREADS is set to the instance's CPU count unless the user set
// it.
func Env(base []string, slot binding.Slot, r nodegroup.Ranks, o EnvOptions) ([]string, error) {
	drop := map[string]bool{}
	for _, k := range append(replaced, gpuvendor.Of(o.Vendor).NotInherited()...) {
		drop[k] = true
	}
	if o.Rendezvous != nil {
		// NewRendezvous has honoured inherited values already; the
		// restart count and the error file are the supervisor's
		// (groupMode.jobOf): an outer torchrun's must not make every
		// rank write one file
		for _, k := range []string{"MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS",
			"ROLE_NAME", "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_ERROR_FILE"} {
			drop[k] = true
		}
	}
	out := make([]string, 0, len(base)+16)
	hasOMP, hasNCCL := false, false
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		// The user's own settings (GPULAUNCH_NODE_FILE) pass through.
		if drop[k] {
			continue
		}
		hasOMP = hasOMP || k == "OMP_NUM_THREADS"
		hasNCCL = hasNCCL || k == "NCCL_ASYNC_ERROR_HANDLING" || k == "TORCH_NCCL_ASYNC_ERROR_HANDLING"
		out = append(out, kv)
	}
	visible, err := visibleVars(o.Vendor, slot.GPUs, o)
	if err != nil {
		return nil, err
	}
	out = append(out, visible...)
	own := make([]string, len(slot.GPUs))
	for i, g := range slot.GPUs {
		own[i] = g.UUID
	}
	itoa := strconv.Itoa
	out = append(out,
		"GPULAUNCH_INSTANCE="+itoa(slot.Index),
		"GPULAUNCH_NINSTANCES="+itoa(r.LocalWorldSize),
		"GPULAUNCH_GPUS="+strings.Join(own, ","),
		"GPULAUNCH_CPUS="+slot.CPUs.String(),
		"LOCAL_RANK="+itoa(r.LocalRank), "LOCAL_WORLD_SIZE="+itoa(r.LocalWorldSize),
		"RANK="+itoa(r.Rank), "WORLD_SIZE="+itoa(r.WorldSize),
		"ROLE_RANK="+itoa(r.Rank), "ROLE_WORLD_SIZE="+itoa(r.WorldSize),
	)
	if r.GroupRank >= 0 {
		out = append(out, "GROUP_RANK="+itoa(r.GroupRank), "GROUP_WORLD_SIZE="+itoa(r.GroupWorldSize))
	}
	if rv := o.Rendezvous; rv != nil {
		out = append(out, "MASTER_ADDR="+rv.Addr, "MASTER_PORT="+itoa(rv.Port), "TORCHELASTIC_RUN_ID="+rv.RunID)
		out = append(out, torchrunVars(hasNCCL)...)
	}
	if !hasOMP && slot.CPUs.Size() > 0 {
		out = append(out, "OMP_NUM_THREADS="+strconv.Itoa(slot.CPUs.Size()))
	}
	return out, nil
}

// torchrunVars are the rest of what torchrun (torch 1.13, checked by
// running it) gives every worker besides ranks and the rendezvous: the
// role it plays in its one role, and that it must not look for its
// agent's store (gpulaunch runs none: env:// meets at MASTER_ADDR). And
// NCCL's async error handling: with it a rank left waiting in a
// collective by another rank's failure fails too, and the group ends or
// restarts, instead of hanging until NCCL's timeout (ten minutes or
// more). Torch reads TORCH_NCCL_ASYNC_ERROR_HANDLING (from 2.2) before
// NCCL_ASYNC_ERROR_HANDLING; userSetNCCL: the user set either, and that
// choice stands — gpulaunch then sets neither, so as not to override it
// with the name torch reads first.
func torchrunVars(userSetNCCL bool) []string {
	vars := []string{"ROLE_NAME=default", "TORCHELASTIC_USE_AGENT_STORE=False"}
	if !userSetNCCL {
		vars = append(vars, "TORCH_NCCL_ASYNC_ERROR_HANDLING=1", "NCCL_ASYNC_ERROR_HANDLING=1")
	}
	return vars
}

func ownFirst(own, all []gpu.GPU) []gpu.GPU {
	seen := map[string]bool{}
	out := append([]gpu.GPU(nil), own...)
	for _, g := range own {
		seen[g.UUID] = true
	}
	for _, g := range all {
		if !seen[g.UUID] {
			out = append(out, g)
		}
	}
	return out
}
