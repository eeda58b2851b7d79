/*
 * A stand-in for NVIDIA's libnvidia-ml.so.1, so that gpulaunch's use of
 * NVML is tested with real processes on machines without a GPU: which
 * commands load NVML, what they call, and what they do when its init
 * fails or never answers (issue 36; cmd/gpulaunch/nvmlstandin_test.go
 * builds it with gcc as libnvidia-ml.so.1 and puts its directory first in
 * LD_LIBRARY_PATH, where go-nvml's dlopen("libnvidia-ml.so.1") finds it).
 *
 * It exports what go-nvml's load and Init look up and what pkg/nvml's
 * inventory calls (nvml_cgo.go: Inventory, describe, migDevices), with
 * nvml.h's signatures; its telemetry calls answer NVML_ERROR_NOT_SUPPORTED.
 * Settings, from the environment:
 *
 *   NVML_STANDIN_RECORD       a file to which each call is appended, its
 *                             name on a line; "load" when the library is
 *                             loaded (its constructor), before any call
 *   NVML_STANDIN_INIT_RETURN  what nvmlInit_v2 returns (e.g. 9,
 *                             NVML_ERROR_DRIVER_NOT_LOADED; 18,
 *                             NVML_ERROR_LIB_RM_VERSION_MISMATCH); 0 if unset
 *   NVML_STANDIN_INIT_SLEEP   seconds nvmlInit_v2 sleeps first (a hung
 *                             init, go-nvml issue #152)
 *   NVML_STANDIN_COST_MS      milliseconds nvmlInit_v2 and nvmlShutdown each
 *                             spend, as a real one does (an H200 node: init
 *                             8-10 ms, shutdown 9-10 ms; scripts/bench-nvml.sh)
 *   NVML_STANDIN_GPU          UUID,PCI,MINOR of the one GPU it lists
 *                             (e.g. GPU-…,0000:00:06.0,0), with NUMA node 0
 *                             and CPUs 0-63; none if unset
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;

enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
};

typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;

struct nvmlDevice_st {
    int unused;
};
static struct nvmlDevice_st the_gpu;

/* record appends name and a newline to NVML_STANDIN_RECORD, in one write
 * (O_APPEND), so that the lines of concurrent calls never interleave. */
static void record(const char *name) {
    const char *file = getenv("NVML_STANDIN_RECORD");
    if (file == NULL || *file == '\0') {
        return;
    }
    int fd = open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        return;
    }
    char line[128];
    int n = snprintf(line, sizeof line, "%s\n", name);
    if (write(fd, line, (size_t)n) < 0) {
        /* nothing to do: the test reads what is there */
    }
    close(fd);
}

__attribute__((constructor)) static void loaded(void) { record("load"); }

/* gpuField copies field i (0: UUID, 1: PCI, 2: minor) of NVML_STANDIN_GPU
 * into out; 0 when there is no GPU or no such field. */
static int gpuField(int i, char *out, size_t size) {
    const char *gpu = getenv("NVML_STANDIN_GPU");
    if (gpu == NULL || *gpu == '\0') {
        return 0;
    }
    for (; i > 0; i--) {
        gpu = strchr(gpu, ',');
        if (gpu == NULL) {
            return 0;
        }
        gpu++;
    }
    size_t n = strcspn(gpu, ",");
    if (n + 1 > size) {
        return 0;
    }
    memcpy(out, gpu, n);
    out[n] = '\0';
    return 1;
}

static nvmlReturn_t copyString(const char *s, char *out, unsigned int length) {
    if (strlen(s) + 1 > length) {
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    strcpy(out, s);
    return NVML_SUCCESS;
}

static nvmlReturn_t ofTheGPU(nvmlDevice_t device) {
    return device == &the_gpu ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

/* cost spends NVML_STANDIN_COST_MS milliseconds, as a real call does. */
static void cost(void) {
    const char *s = getenv("NVML_STANDIN_COST_MS");
    if (s != NULL && *s != '\0') {
        usleep((useconds_t)atoi(s) * 1000);
    }
}

nvmlReturn_t nvmlInit_v2(void) {
    record("nvmlInit_v2");
    cost();
    const char *s = getenv("NVML_STANDIN_INIT_SLEEP");
    if (s != NULL && *s != '\0') {
        sleep((unsigned int)atoi(s));
    }
    const char *r = getenv("NVML_STANDIN_INIT_RETURN");
    return r != NULL && *r != '\0' ? atoi(r) : NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
    record("nvmlShutdown");
    cost();
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result) {
    switch (result) {
    case NVML_SUCCESS:
        return "Success";
    case NVML_ERROR_INVALID_ARGUMENT:
        return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
        return "Not Supported";
    case NVML_ERROR_INSUFFICIENT_SIZE:
        return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
        return "Driver Not Loaded";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
        return "Driver/library version mismatch"; /* the real library's words */
    }
    return "Unknown Error";
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    record("nvmlSystemGetDriverVersion");
    return copyString("580.159.04", version, length);
}

/* The H200's driver 580 is CUDA 13.0 (NVML's 1000 * major + 10 * minor). */
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *version) {
    record("nvmlSystemGetCudaDriverVersion");
    *version = 13000;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *version) {
    record("nvmlSystemGetCudaDriverVersion_v2");
    *version = 13000;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    record("nvmlDeviceGetCount_v2");
    char uuid[96];
    *count = (unsigned int)gpuField(0, uuid, sizeof uuid);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    record("nvmlDeviceGetHandleByIndex_v2");
    char uuid[96];
    if (index != 0 || !gpuField(0, uuid, sizeof uuid)) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    *device = &the_gpu;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
    record("nvmlDeviceGetUUID");
    char s[96];
    if (ofTheGPU(device) != NVML_SUCCESS || !gpuField(0, s, sizeof s)) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    return copyString(s, uuid, length);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci) {
    record("nvmlDeviceGetPciInfo_v3");
    char bus[32];
    if (ofTheGPU(device) != NVML_SUCCESS || !gpuField(1, bus, sizeof bus)) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    memset(pci, 0, sizeof *pci);
    strcpy(pci->busId, bus);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
    record("nvmlDeviceGetName");
    if (ofTheGPU(device) != NVML_SUCCESS) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    return copyString("NVIDIA H200", name, length);
}

/* An H200 is compute capability 9.0. */
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor) {
    record("nvmlDeviceGetCudaComputeCapability");
    if (ofTheGPU(device) != NVML_SUCCESS) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    *major = 9;
    *minor = 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minor) {
    record("nvmlDeviceGetMinorNumber");
    char s[16];
    if (ofTheGPU(device) != NVML_SUCCESS || !gpuField(2, s, sizeof s)) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    *minor = (unsigned int)atoi(s);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
    record("nvmlDeviceGetMemoryInfo");
    if (ofTheGPU(device) != NVML_SUCCESS) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    memory->total = 143771ULL << 20;
    memory->used = 0;
    memory->free = memory->total;
    return NVML_SUCCESS;
}

/* nodeSet and cpuSet are arrays of unsigned long, bit b of word w for id
 * 64w+b: node 0, CPUs 0-63. */
nvmlReturn_t nvmlDeviceGetMemoryAffinity(nvmlDevice_t device, unsigned int size, unsigned long *nodeSet, int scope) {
    (void)scope;
    record("nvmlDeviceGetMemoryAffinity");
    if (ofTheGPU(device) != NVML_SUCCESS || size == 0) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    memset(nodeSet, 0, size * sizeof *nodeSet);
    nodeSet[0] = 1;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCpuAffinityWithinScope(nvmlDevice_t device, unsigned int size, unsigned long *cpuSet, int scope) {
    (void)scope;
    record("nvmlDeviceGetCpuAffinityWithinScope");
    if (ofTheGPU(device) != NVML_SUCCESS || size == 0) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    memset(cpuSet, 0, size * sizeof *cpuSet);
    cpuSet[0] = ~0UL;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *current, unsigned int *pending) {
    record("nvmlDeviceGetMigMode");
    if (ofTheGPU(device) != NVML_SUCCESS) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    *current = *pending = 0; /* NVML_DEVICE_MIG_DISABLE */
    return NVML_SUCCESS;
}

/* Telemetry: not what these tests are about; answered, not missing, so
 * that a run which samples does not die of an undefined symbol. */
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, void *utilization) {
    (void)device, (void)utilization;
    record("nvmlDeviceGetUtilizationRates");
    return NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *count, void *infos) {
    (void)device, (void)count, (void)infos;
    record("nvmlDeviceGetComputeRunningProcesses_v3");
    return NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *count, void *infos) {
    (void)device, (void)count, (void)infos;
    record("nvmlDeviceGetMPSComputeRunningProcesses_v3");
    return NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device, void *samples, unsigned int *count, unsigned long long lastSeen) {
    (void)device, (void)samples, (void)count, (void)lastSeen;
    record("nvmlDeviceGetProcessUtilization");
    return NVML_ERROR_NOT_SUPPORTED;
}
