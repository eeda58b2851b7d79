package instance

import (
	"slices"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/gpuvendor"
)

// IsContract says whether k is a variable of the instance contract: one
// gpulaunch sets for an instance or a rank (the README's "Instance
// environment"), which `gpulaunch exec --dry-run` prints. The rules:
//  1. every vendor's variables that tell a process its GPUs
//     (gpuvendor.ToldVars: CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER,
//     ROCR_VISIBLE_DEVICES, ZE_AFFINITY_MASK,
//     ZE_ENABLE_PCI_ID_DEVICE_ORDER);
//  2. the ranks, as torchrun names them: RANK, WORLD_SIZE, LOCAL_RANK,
//     LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE, ROLE_RANK,
//     ROLE_WORLD_SIZE;
//  3. OMP_NUM_THREADS, the instance's CPU count unless the user set it;
//  4. torchrun's rendezvous under --ddp: MASTER_ADDR, MASTER_PORT, and
//     every TORCHELASTIC_ variable;
//  5. every GPULAUNCH_ variable.
func IsContract(k string) bool {
	switch {
	case slices.Contains(gpuvendor.ToldVars(), k):
		return true
	case slices.Contains(replaced, k) && !strings.HasPrefix(k, "GPULAUNCH_"):
		return true
	case k == "OMP_NUM_THREADS", k == "MASTER_ADDR", k == "MASTER_PORT":
		return true
	}
	return strings.HasPrefix(k, "TORCHELASTIC_") || strings.HasPrefix(k, "GPULAUNCH_")
}
