package instance

import "testing"

// The instance contract's variables, by IsContract's rules: the list
// `gpulaunch exec --dry-run` printed before it moved here
// (cmd/gpulaunch's isContractVar), and the variables it left out.
func TestIsContract(t *testing.T) {
	cases := []struct {
		rule string
		vars []string
		want bool
	}{
		{"rule 1: every vendor's told variables", []string{"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "ROCR_VISIBLE_DEVICES", "ZE_AFFINITY_MASK", "ZE_ENABLE_PCI_ID_DEVICE_ORDER"}, true},
		{"rule 1: variables that are only dropped are not told", []string{"HIP_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "ZE_FLAT_DEVICE_HIERARCHY"}, false},
		{"rule 2: the ranks", []string{"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE"}, true},
		{"rule 3: OpenMP's threads", []string{"OMP_NUM_THREADS"}, true},
		{"rule 4: torchrun's rendezvous", []string{"MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_ERROR_FILE", "TORCHELASTIC_RESTART_COUNT"}, true},
		{"rule 5: gpulaunch's own", []string{"GPULAUNCH_INSTANCE", "GPULAUNCH_NINSTANCES", "GPULAUNCH_GPUS", "GPULAUNCH_CPUS", "GPULAUNCH_ANYTHING"}, true},
		{"no rule: the rest of the environment", []string{"PATH", "HOME", "SLURM_PROCID", "ROLE_NAME", "NCCL_ASYNC_ERROR_HANDLING", "OMP_PLACES", "LOCAL_RANKS", ""}, false},
	}
	for _, tc := range cases {
		for _, k := range tc.vars {
			if got := IsContract(k); got != tc.want {
				t.Errorf("%s: IsContract(%q) = %v, want %v", tc.rule, k, got, tc.want)
			}
		}
	}
}
