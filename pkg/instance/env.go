package instance

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/gpuvendor"
	"github.com/gpulaunch/gpulaunch/pkg/nodegroup"
	"golang.org/x/sys/unix"
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
	// (torchrunVars, signalsToHandle).
	Rendezvous *nodegroup.Rendezvous
	// Forwarded are the signals, named as Python's signal module names
	// them ("SIGUSR1"), that the run's supervisor passes to every
	// instance (launcher's forwarded); nil where the app takes its
	// signals from its own launcher (rank mode: gpulaunch execs it).
	// A user's TORCHELASTIC_SIGNALS_TO_HANDLE must name only these.
	Forwarded []string
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
	signals, hasSignals := "", false
	for _, kv := range base {
		k, v, _ := strings.Cut(kv, "=")
		// The user's own settings (GPULAUNCH_NODE_FILE) pass through.
		if drop[k] {
			continue
		}
		hasOMP = hasOMP || k == "OMP_NUM_THREADS"
		hasNCCL = hasNCCL || k == "NCCL_ASYNC_ERROR_HANDLING" || k == "TORCH_NCCL_ASYNC_ERROR_HANDLING"
		if k == SignalsToHandleVar {
			signals, hasSignals = v, true
		}
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
		told, err := signalsToHandle(signals, hasSignals, o.Forwarded)
		if err != nil {
			return nil, err
		}
		if told != "" {
			out = append(out, SignalsToHandleVar+"="+told)
		}
	}
	if !hasOMP && slot.CPUs.Size() > 0 {
		out = append(out, "OMP_NUM_THREADS="+strconv.Itoa(slot.CPUs.Size()))
	}
	return out, nil
}

// torchrunVars are the rest of what torchrun (torch 1.13 and 2.11,
// checked by running them) gives every worker besides ranks, the
// rendezvous and the signals it handles: the role it plays in its one
// role, and that it must not look for its agent's store (gpulaunch runs
// none: env:// meets at MASTER_ADDR). And NCCL's async error handling:
// with it a rank left waiting in a collective by another rank's failure
// fails too, and the group ends or restarts, instead of hanging until
// NCCL's timeout (ten minutes or more). Only the name torch reads from
// 2.2, TORCH_NCCL_ASYNC_ERROR_HANDLING, as torchrun 2.x sets it: the old
// NCCL_ASYNC_ERROR_HANDLING still works there but makes every rank print
// a deprecation warning (torch 2.11); torch < 2.2 reads only the old name,
// which its users set themselves (docs/multinode.md). userSetNCCL: the
// user set either name, and that choice stands — gpulaunch then sets
// neither, so as not to override it with the name torch reads first.
func torchrunVars(userSetNCCL bool) []string {
	vars := []string{"ROLE_NAME=default", "TORCHELASTIC_USE_AGENT_STORE=False"}
	if !userSetNCCL {
		vars = append(vars, "TORCH_NCCL_ASYNC_ERROR_HANDLING=1")
	}
	return vars
}

// SignalsToHandleVar names the signals torchrun's agent handles: it
// catches each and ends its workers with it (the signal, then KILL
// after a grace), and its workers inherit the variable
// (torch/distributed/launcher/api.py, PyTorch 2.9+: --signals-to-handle;
// added so that Slurm's USR1 and USR2 reach the workers).
const SignalsToHandleVar = "TORCHELASTIC_SIGNALS_TO_HANDLE"

// TorchrunSignals is torchrun's default for SignalsToHandleVar.
const TorchrunSignals = "SIGTERM,SIGINT,SIGHUP,SIGQUIT"

// signalsToHandle is what a --ddp instance is told in
// TORCHELASTIC_SIGNALS_TO_HANDLE ("": nothing to add, the user's value
// stands), given the user's value (set: there is one) and the signals
// the run passes to every instance (forwarded; nil in rank mode). The
// rules, in order:
//  1. Unset: torchrun's default, SIGTERM,SIGINT,SIGHUP,SIGQUIT: the
//     signals gpulaunch passes to every rank and then stops the run with
//     (KILL after --kill-wait), as torchrun's agent ends its workers.
//  2. Where the ranks take their signals from their own launcher (rank
//     mode, forwarded nil), the user's value stands unread: srun or
//     mpirun delivers every signal to the rank itself.
//  3. Otherwise the user's value stands, and each name in it, read as
//     torchrun reads it (split at commas, the spaces around a name
//     dropped, spelt as Python's signal module spells it), must be a
//     signal gpulaunch passes to every rank; USR1 and USR2 are passed on
//     and nothing else (the README's "Signals", rule 4), where torchrun
//     would end its workers with them.
//  4. Any other name is refused, naming the ones gpulaunch passes on (or
//     the spelling meant: SIGTERM for TERM or 15, commas between names): a
//     signal gpulaunch leaves at its default action (SIGALRM, SIGXCPU:
//     gpulaunch would end of it, not pass it on), or a name torchrun
//     would skip with a warning (USR1, an empty one): either way the
//     signal meant would reach no rank.
//
// The list never narrows what gpulaunch passes on: INT, TERM, HUP and
// QUIT stop the run whether listed or not (the README's "Signals").
func signalsToHandle(value string, set bool, forwarded []string) (string, error) {
	switch {
	case !set:
		return TorchrunSignals, nil
	case forwarded == nil:
		return "", nil
	}
	for _, name := range strings.Split(value, ",") {
		name = strings.TrimSpace(name)
		if slices.Contains(forwarded, name) {
			continue
		}
		unset := "or unset it for torchrun's default " + TorchrunSignals
		meant := strings.ToUpper(name)
		if !strings.HasPrefix(meant, "SIG") {
			meant = "SIG" + meant
		}
		if n, err := strconv.Atoi(name); err == nil && unix.SignalName(syscall.Signal(n)) != "" {
			meant = unix.SignalName(syscall.Signal(n))
		}
		switch {
		case name == "":
			return "", fmt.Errorf("%s=%s: an empty name is no signal: name them as torchrun reads them (SIGTERM,SIGUSR1), %s", SignalsToHandleVar, value, unset)
		case strings.ContainsAny(name, " \t;:|"):
			joined := strings.Join(strings.FieldsFunc(value, func(r rune) bool { return strings.ContainsRune(" \t;:|,", r) }), ",")
			return "", fmt.Errorf("%s=%s: torchrun reads names separated by commas: write %s", SignalsToHandleVar, value, joined)
		case slices.Contains(forwarded, meant):
			return "", fmt.Errorf("%s=%s: %s is not a signal name as torchrun reads them (Python's): write %s", SignalsToHandleVar, value, name, meant)
		}
		return "", fmt.Errorf("%s=%s: gpulaunch passes %s and %s to every rank, not %s: list only those (Slurm's checkpoint signal: --signal=USR1@120), %s",
			SignalsToHandleVar, value, strings.Join(forwarded[:len(forwarded)-1], ", "), forwarded[len(forwarded)-1], name, unset)
	}
	return "", nil
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
