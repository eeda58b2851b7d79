// Package ddpgroup is the sequence of a distributed group (--ddp) run as
// torchrun's agent runs its worker group: rules G1–G7 above Machine. It
// is pure — no process, clock or lock — and launcher's groupMode adapts
// it as a runMode, as fateMode adapts pkg/fate.
package ddpgroup
