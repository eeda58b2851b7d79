package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/gpulaunch/gpulaunch/pkg/binding"
	"github.com/gpulaunch/gpulaunch/pkg/gpu"
	"github.com/gpulaunch/gpulaunch/pkg/gpuvendor"
)

const infoUsage = `Usage: gpulaunch info [--json] [--simulate NODE|FILE]

Shows what this process was given: GPUs by UUID and PCI address with their
NUMA node and local CPUs, the CPUs and memory nodes it may use, the cgroup
memory limit, the Slurm job/step and MPI local rank, and every guess made.`

func (a *app) info(args []string) error {
	var c commonFlags
	fs := infoFlagSet(&c)
	if done, err := a.parseFlags(fs, args, infoUsage); done || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("info takes no arguments, got %q", fs.Arg(0))
	}
	log, err := c.logger(a.stderr)
	if err != nil {
		return err
	}
	alloc, err := a.discover(c)
	if err != nil {
		return err
	}
	log.Debug("allocation", zap.String("backend", alloc.Backend), zap.Int("gpus", len(alloc.GPUs)), zap.Stringer("cpus", alloc.CPUs))
	doc := infoJSON(alloc)
	if gpuvendor.Of(alloc.Vendor).MPS && len(alloc.GPUs) > 0 {
		doc.MPS = a.mpsInfo()
	}
	if c.json {
		return writeJSON(a.stdout, doc)
	}
	writeInfo(a.stdout, alloc)
	if m := doc.MPS; m != nil {
		fmt.Fprintf(a.stdout, "MPS:       %s\n", m.Says)
	}
	return nil
}

func infoFlagSet(c *commonFlags) *pflag.FlagSet {
	fs := pflag.NewFlagSet("info", pflag.ContinueOnError)
	c.register(fs)
	return fs
}

// infoDoc is `info --json`.
type infoDoc struct {
	binding.Allocation
	Topology topologySummary `json:"topology"`
	// MPS is what --mps would find on an NVIDIA node; absent elsewhere.
	MPS *mpsInfo `json:"mps,omitempty"`
}

type topologySummary struct {
	CPUs           string `json:"cpus"`
	Sockets        int    `json:"sockets"`
	NUMANodes      []int  `json:"numa_nodes"`
	ThreadsPerCore int    `json:"threads_per_core"`
}

func infoJSON(a binding.Allocation) infoDoc {
	if a.GPUs == nil {
		a.GPUs = []gpu.GPU{}
	}
	if a.Warnings == nil {
		a.Warnings = []string{}
	}
	t := a.Topology
	return infoDoc{Allocation: a, Topology: topologySummary{
		CPUs: t.CPUs().String(), Sockets: t.Sockets(), NUMANodes: t.NUMANodes(), ThreadsPerCore: t.ThreadsPerCore(),
	}}
}

func writeInfo(w io.Writer, a binding.Allocation) {
	t := a.Topology
	fmt.Fprintf(w, "Host:      %s (%sGPUs from %s", orDash(a.Hostname), vendorWord(a.Vendor), a.Backend)
	if a.Driver != "" {
		fmt.Fprintf(w, ", driver %s", a.Driver)
	}
	fmt.Fprintln(w, ")")
	if len(a.GPUs) == 0 {
		fmt.Fprintf(w, "GPUs:      none found: %s\n", a.GPUReason)
	} else {
		fmt.Fprintf(w, "GPUs:      %d — %s\n", len(a.GPUs), a.GPUReason)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  %s\tUUID\tPCI\tNUMA\tLOCAL CPUS\tMEMORY\tNAME\n", ordinalHeader(a))
		for i, g := range a.GPUs {
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%s\n", i, g.UUID, g.BusID, numaString(g.NUMANode),
				orDash(g.LocalCPUs.String()), bytesString(g.MemoryBytes), g.Name)
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "CPUs:      %d allowed (%s) of %d; %d socket(s), NUMA nodes %s, %d thread(s) per core\n",
		a.CPUs.Size(), a.CPUs, t.CPUs().Size(), t.Sockets(), intsString(t.NUMANodes()), t.ThreadsPerCore())
	mem := "no cgroup memory limit"
	if a.MemoryLimit > 0 {
		mem = "cgroup memory limit " + bytesString(a.MemoryLimit)
	}
	fmt.Fprintf(w, "Memory:    NUMA nodes %s; %s\n", a.MemNodes, mem)
	fmt.Fprintln(w, a.Sched.Words())
	if a.LocalRank != nil {
		fmt.Fprintf(w, "Launcher:  local rank %d", a.LocalRank.Rank)
		if a.LocalRank.Size > 0 {
			fmt.Fprintf(w, " of %d", a.LocalRank.Size)
		}
		fmt.Fprintf(w, " (%s)\n", a.LocalRank.Source)
	}
	writeWarnings(w, a.Warnings)
}

// vendorWord names the vendor before "GPUs", "" for a node without any.
func vendorWord(v gpu.Vendor) string {
	if w := gpuvendor.Of(v).Word; w != "" {
		return w + " "
	}
	return ""
}

// ordinalHeader names the runtime whose device numbers the GPU table's
// first column gives: what the app sees as device i in this environment.
// Level Zero's are FLAT ordinals (a tile each) unless the hierarchy is
// COMPOSITE, where the app sees cards.
func ordinalHeader(a binding.Allocation) string {
	return gpuvendor.Of(a.Vendor).OrdinalName(a.ZEHierarchy)
}

func writeWarnings(w io.Writer, warnings []string) {
	if len(warnings) == 0 {
		return
	}
	fmt.Fprintln(w, "Warnings:")
	for _, x := range warnings {
		fmt.Fprintf(w, "  - %s\n", x)
	}
}

const planUsage = `Usage: gpulaunch plan -n N [-G G] [-c C] [--mem-bind preferred|bind|none] [--json] [--simulate NODE|FILE]

Shows where each of N instances would run — its GPU(s), CPU set and memory
policy — without starting anything. The same plan is what a run uses.`

// planFlags are the flags that shape slots, shared by plan and run.
type planFlags struct {
	instances, gpus, cpus int
	memBind               string
	shareGPUs             bool
	overcommit            bool
	mps                   mpsFlags // run and plan only (register)
}

func (p *planFlags) register(fs *pflag.FlagSet) {
	fs.IntVarP(&p.instances, "ntasks", "n", 0, "number of instances N")
	p.registerOvercommit(fs)
	p.registerShape(fs, "instance", 1, "GPUs per instance; 0 runs instances without a GPU")
	p.mps.register(fs)
}

// registerShape registers the flags that shape one slot; rank mode has
// them too, without -n (the launcher decides how many ranks there are).
// gpus is -G's default; rank mode's, decided from the node when -G is not
// given, is in gpusHelp, and it registers 0 so that help shows one default.
func (p *planFlags) registerShape(fs *pflag.FlagSet, unit string, gpus int, gpusHelp string) {
	fs.IntVarP(&p.gpus, "gpus-per-task", "G", gpus, gpusHelp)
	p.registerCPUs(fs, unit)
}

// registerOvercommit registers -O (run, plan and scale).
func (p *planFlags) registerOvercommit(fs *pflag.FlagSet) {
	fs.BoolVarP(&p.overcommit, "overcommit", "O", false, "allow more instances than allowed CPUs; they share them (as srun -O)")
}

// registerCPUs registers the flags that shape a slot's CPUs and memory.
func (p *planFlags) registerCPUs(fs *pflag.FlagSet, unit string) {
	fs.IntVarP(&p.cpus, "cpus-per-task", "c", 0, "CPUs per "+unit+" (default: an even share of the GPU-local CPUs)")
	fs.StringVar(&p.memBind, "mem-bind", "preferred", "NUMA memory policy: preferred, bind or none")
	fs.BoolVar(&p.shareGPUs, "share-gpus", false, "allow more "+unit+"s than GPUs; they take turns on them")
}

// request builds the Request; without -n, Instances stays 0 unless -n is
// required (plan), and the caller decides it from the allocation (run).
func (p planFlags) request(fs *pflag.FlagSet, requireN bool) (binding.Request, error) {
	if requireN && !fs.Changed("ntasks") {
		return binding.Request{}, usagef("-n N is required: how many instances to plan")
	}
	// the counts' signs here, with the other flags, so that a command line
	// that parses is one a plan can be asked of (FuzzParseArgs)
	switch {
	case fs != nil && fs.Changed("ntasks") && p.instances < 1:
		return binding.Request{}, usagef("-n %d: the number of instances must be at least 1", p.instances)
	case p.gpus < 0:
		return binding.Request{}, usagef("-G %d: the number of GPUs cannot be negative (-G 0: no GPU)", p.gpus)
	case p.cpus < 0:
		return binding.Request{}, usagef("-c %d: the number of CPUs cannot be negative", p.cpus)
	case fs != nil && fs.Changed("gpus-per-task") && p.gpus == 0 && p.shareGPUs:
		return binding.Request{}, usagef("--share-gpus with -G 0: slots without a GPU have none to share; drop --share-gpus, or give -G 1 or more")
	case fs != nil && fs.Changed("cpus-per-task") && p.cpus == 0:
		// 0 is the default's "not given": taken as given, it would be
		// ignored for an even share, which is not what -c 0 says
		return binding.Request{}, usagef("-c 0: a slot needs at least 1 CPU; give -c 1 or more, or leave -c out for an even share of the GPU-local CPUs")
	}
	if fs != nil {
		if err := p.mps.check(fs); err != nil {
			return binding.Request{}, err
		}
	}
	pol, err := binding.ParseMemPolicy(p.memBind)
	if err != nil {
		return binding.Request{}, usageError{err}
	}
	// --mps shares GPUs: more instances than GPUs is what it is for
	r := binding.Request{Instances: p.instances, GPUsPerInstance: p.gpus, CPUsPerInstance: p.cpus, MemPolicy: pol, ShareGPUs: p.shareGPUs || p.mps.on, Overcommit: p.overcommit}
	return r, nil
}

func (a *app) plan(args []string) error {
	var c commonFlags
	var p planFlags
	fs := planFlagSet(&c, &p)
	if done, err := a.parseFlags(fs, args, planUsage); done || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("plan takes no command; to run one use `gpulaunch -n N -- %s`", fs.Arg(0))
	}
	req, err := p.request(fs, true)
	if err != nil {
		return err
	}
	if _, err := c.logger(a.stderr); err != nil {
		return err
	}
	alloc, err := a.discover(c)
	if err != nil {
		return err
	}
	plan, err := binding.NewPlan(alloc, req)
	if err != nil {
		return usageError{err}
	}
	sh, err := planSharing(plan, alloc.Vendor, p.mps)
	if err != nil {
		return err
	}
	if c.json {
		return writeJSON(a.stdout, planJSON(alloc, req, plan, sh))
	}
	writePlan(a.stdout, alloc, plan, sh)
	return nil
}

func planFlagSet(c *commonFlags, p *planFlags) *pflag.FlagSet {
	fs := pflag.NewFlagSet("plan", pflag.ContinueOnError)
	c.register(fs)
	p.register(fs)
	return fs
}

// planDoc is `plan --json`.
type planDoc struct {
	Host     string         `json:"host,omitempty"`
	Backend  string         `json:"gpu_backend"`
	Request  requestDoc     `json:"request"`
	CPUs     string         `json:"allowed_cpus"`
	Slots    []binding.Slot `json:"slots"`
	Locality float64        `json:"locality"`
	// Sharing is how instances share GPUs; absent when none is shared.
	Sharing  *sharing `json:"gpu_sharing,omitempty"`
	Warnings []string `json:"warnings"`
}

type requestDoc struct {
	Instances       int    `json:"instances"`
	GPUsPerInstance int    `json:"gpus_per_instance"`
	CPUsPerInstance int    `json:"cpus_per_instance"`
	MemPolicy       string `json:"mem_policy"`
	ShareGPUs       bool   `json:"share_gpus"`
}

func planJSON(a binding.Allocation, r binding.Request, p binding.Plan, sh *sharing) planDoc {
	// lists are lists, empty ones too: never null (docs/plan.schema.json)
	warn := append(append([]string{}, a.Warnings...), p.Warnings...)
	p.Slots = append([]binding.Slot{}, p.Slots...)
	for i := range p.Slots {
		if p.Slots[i].GPUs == nil {
			p.Slots[i].GPUs = []gpu.GPU{}
		}
	}
	return planDoc{Host: a.Hostname, Backend: a.Backend, CPUs: a.CPUs.String(), Slots: p.Slots, Locality: p.Locality(), Warnings: warn, Sharing: sh,
		Request: requestDoc{r.Instances, r.GPUsPerInstance, r.CPUsPerInstance, string(r.MemPolicy), r.ShareGPUs}}
}

func writePlan(w io.Writer, a binding.Allocation, p binding.Plan, sh *sharing) {
	fmt.Fprintf(w, "Plan for %d instance(s) on %s (%sGPUs from %s), %d allowed CPUs:\n", len(p.Slots), orDash(a.Hostname), vendorWord(a.Vendor), a.Backend, a.CPUs.Size())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  INSTANCE\tGPU (PCI)\tUUID\tNUMA\tCPUS\tLOCAL\tMEMORY")
	for _, s := range p.Slots {
		var bus, uuid, numa []string
		for _, g := range s.GPUs {
			bus, uuid, numa = append(bus, g.Address()), append(uuid, shortUUID(g.UUID)), append(numa, numaString(g.NUMANode))
		}
		local := "-"
		if s.LocalCPUs >= 0 {
			local = fmt.Sprintf("%d/%d", s.LocalCPUs, s.CPUs.Size())
		}
		mem := string(s.MemPolicy)
		if !s.MemNodes.IsEmpty() {
			mem += ":" + s.MemNodes.String()
		}
		cpus := s.CPUs.String()
		if s.SharedCPUs {
			cpus += " (shared)"
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Index, orDash(strings.Join(bus, ",")), orDash(strings.Join(uuid, ",")),
			orDash(strings.Join(numa, ",")), cpus, local, mem)
	}
	tw.Flush()
	fmt.Fprintf(w, "Locality:  %.0f%% of the CPUs are local to their instance's GPU(s)\n", 100*p.Locality())
	sh.Write(w)
	writeWarnings(w, append(append([]string{}, a.Warnings...), p.Warnings...))
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return errors.New("writing JSON: " + err.Error())
	}
	return nil
}

func shortUUID(u string) string {
	if len(u) > 12 {
		return u[:12] + "…"
	}
	return u
}

func numaString(n int) string {
	if n < 0 {
		return "?"
	}
	return fmt.Sprint(n)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func intsString(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ",")
}

func bytesString(b uint64) string {
	switch {
	case b == 0:
		return "-"
	case b >= 1<<30:
		return fmt.Sprintf("%.0f GiB", float64(b)/(1<<30))
	default:
		return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
	}
}
