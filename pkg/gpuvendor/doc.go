// Package gpuvendor is what each GPU maker's runtime is told, one value
// per vendor (Vendor): its name and the words for it, the variable its
// runtime selects devices by with that variable's grammar — read from an
// environment (CUDA_VISIBLE_DEVICES in cvd.go, ROCR_VISIBLE_DEVICES and
// HIP's lists in rocr.go, Level Zero's ZE_AFFINITY_MASK in zemask.go) and
// written for an instance (Tell) —, the device ordinals its runtime numbers
// by, and whether its GPUs can be shared through MPS.
//
// The places that differ by vendor (pkg/binding's Reconcile, the instance
// environment of pkg/instance, the launcher's telemetry, MPS's checks, the
// CLI's info) ask the vendor's value and never switch on its name: a new
// vendor is one more value in vendors.go (and its backend in pkg/gpu,
// which finds its GPUs).
//
// Pure: it reads the strings and devices it is given. It sits above
// pkg/gpu (whose GPU and Vendor name it uses) and below pkg/binding and
// pkg/instance.
package gpuvendor
