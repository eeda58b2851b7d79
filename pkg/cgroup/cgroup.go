package cgroup

import (
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/gpulaunch/gpulaunch/pkg/cpuset"
)

// Cgroup is what this process's cgroups allow: Slurm's task/cgroup plugin
// enforces a job's CPUs and memory here, and the SLURM_MEM_* variables are
// only echoes of the request.
type Cgroup struct {
	Version int `json:"version"` // 1, 2, or 0 when no cgroup was found
	// CPUs and Mems are the effective cpuset; empty when unknown.
	CPUs cpuset.Set `json:"cpus"`
	Mems cpuset.Set `json:"mems"`
	// MemoryLimit is the smallest memory limit on the path to the root in
	// bytes, 0 for none.
	MemoryLimit uint64 `json:"memory_limit_bytes,omitempty"`
	// Paths are the cgroup directories read, for messages.
	Paths []string `json:"paths,omitempty"`
}

// unlimited is the threshold above which a v1 limit means "no limit"
// (the kernel prints PAGE_COUNTER_MAX rounded to pages, 9223372036854771712).
const unlimited = uint64(1) << 62

// Read reads this process's cgroup limits from root (the machine's
// filesystem, "/" in production). selfCgroup and mountinfo are the
// contents of /proc/self/cgroup and /proc/self/mountinfo.
func Read(root fs.FS, selfCgroup, mountinfo string) (Cgroup, error) {
	paths, err := parseProcCgroup(selfCgroup)
	if err != nil {
		return Cgroup{}, err
	}
	mounts := parseCgroupMounts(mountinfo)
	var cg Cgroup
	dir := func(controller string) (string, bool) {
		m, ok := mounts[controller]
		p, ok2 := paths[controller]
		if !ok || !ok2 {
			return "", false
		}
		rel := strings.TrimPrefix(p, m.root)
		return strings.TrimPrefix(path.Join(m.point, rel), "/"), true
	}
	if d, ok := dir("cpuset"); ok { // v1
		cg.Version = 1
		cg.Paths = append(cg.Paths, "/"+d)
		cg.CPUs = readSetFile(root, d, "cpuset.effective_cpus", "cpuset.cpus")
		cg.Mems = readSetFile(root, d, "cpuset.effective_mems", "cpuset.mems")
	}
	if d, ok := dir("memory"); ok {
		cg.Version = 1
		cg.Paths = append(cg.Paths, "/"+d)
		cg.MemoryLimit = minLimitUp(root, d, "memory.limit_in_bytes", mounts["memory"].point)
	}
	if d, ok := dir(""); ok && cg.Version == 0 { // pure v2
		cg.Version = 2
		cg.Paths = append(cg.Paths, "/"+d)
		cg.CPUs = readSetFile(root, d, "cpuset.cpus.effective")
		cg.Mems = readSetFile(root, d, "cpuset.mems.effective")
		cg.MemoryLimit = minLimitUp(root, d, "memory.max", mounts[""].point)
	}
	return cg, nil
}

// parseProcCgroup reads /proc/self/cgroup: "ID:controllers:path" per
// line; the v2 line has ID 0 and no controllers and is keyed "".
func parseProcCgroup(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		if line == "" {
			continue
		}
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || !strings.HasPrefix(parts[2], "/") {
			return nil, fmt.Errorf("/proc/self/cgroup line %q is not ID:controllers:/path", line)
		}
		if parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out, nil
}

type mount struct{ root, point string }

// parseCgroupMounts finds cgroup mount points in /proc/self/mountinfo,
// keyed by v1 controller, or "" for the v2 hierarchy. The mount's root
// matters in containers, where the mount shows only a subtree.
func parseCgroupMounts(s string) map[string]mount {
	out := map[string]mount{}
	for _, line := range strings.Split(s, "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			continue
		}
		m := mount{root: f[3], point: f[4]}
		switch g[0] {
		case "cgroup2":
			if _, seen := out[""]; !seen {
				out[""] = m
			}
		case "cgroup":
			for _, opt := range strings.Split(g[2], ",") {
				if opt == "cpuset" || opt == "memory" {
					out[opt] = m
				}
			}
		}
	}
	return out
}

func readSetFile(root fs.FS, dir string, names ...string) cpuset.Set {
	for _, n := range names {
		b, err := fs.ReadFile(root, path.Join(dir, n))
		if err != nil {
			continue
		}
		if s, err := cpuset.Parse(string(b)); err == nil && !s.IsEmpty() {
			return s
		}
	}
	return cpuset.Set{}
}

// minLimitUp walks from dir up to the mount point: a job's limit sits on
// the job directory above the step, so the smallest limit wins.
func minLimitUp(root fs.FS, dir, file, mountPoint string) uint64 {
	stop := strings.TrimPrefix(mountPoint, "/")
	var lim uint64
	for d := dir; ; d = path.Dir(d) {
		if v, ok := readLimit(root, path.Join(d, file)); ok && (lim == 0 || v < lim) {
			lim = v
		}
		if d == stop || d == "." || d == "/" || len(d) < len(stop) {
			break
		}
	}
	return lim
}

// ParseMemoryLimit reads one limit file's content: "max" (v2) and huge v1
// values mean no limit (0).
func ParseMemoryLimit(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	if s == "max" {
		return 0, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("memory limit %q is not a number or max", s)
	}
	if v >= unlimited {
		return 0, nil
	}
	return v, nil
}

func readLimit(root fs.FS, name string) (uint64, bool) {
	b, err := fs.ReadFile(root, name)
	if err != nil {
		return 0, false
	}
	v, err := ParseMemoryLimit(string(b))
	return v, err == nil && v > 0
}
