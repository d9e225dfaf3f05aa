package sim

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/servebench/servebench/engine/perf"
)

// The series dcgm-exporter exports for GPU power and energy (its
// etc/default-counters.csv): a gauge in W, a counter in mJ since boot.
const (
	dcgmPower  = "DCGM_FI_DEV_POWER_USAGE"
	dcgmEnergy = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
)

// power is the emulated GPUs' electricity, from the step physics: each of
// the engine's GPUs (tensor x pipeline parallel) draws its profile's board
// power while a step runs and its idle power between steps (perf.GPU's
// BoardPowerW and IdlePowerW; the assumption is stated there), in modelled
// time, so energy per token is the emulated hardware's at any --speedup.
// Safe for concurrent use.
type power struct {
	board, idle float64 // W per GPU
	gpus        int
	speedup     float64
	now         func() int64 // wall ns since the engine's epoch

	mu        sync.Mutex
	busyS     float64 // modelled seconds of the steps run so far
	busyUntil int64   // wall ns when the step running now ends (0: none yet)
}

func newPower(g perf.GPU, gpus int, speedup float64, now func() int64) *power {
	if speedup <= 0 {
		speedup = 1
	}
	return &power{board: g.BoardPowerW, idle: g.IdlePowerW, gpus: max(1, gpus), speedup: speedup, now: now}
}

// step records a step of modelledS seconds that runs until end (wall ns).
func (p *power) step(modelledS float64, end int64) {
	if p == nil { // a scheduler tested without an engine's meter
		return
	}
	p.mu.Lock()
	p.busyS += modelledS
	p.busyUntil = end
	p.mu.Unlock()
}

// energyMJ is one GPU's energy since the engine started, in mJ: idle power
// over the modelled time, plus the board's excess over it while steps ran.
func (p *power) energyMJ() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	elapsed := float64(p.now()) / 1e9 * p.speedup
	busy := min(p.busyS, elapsed)
	return 1000 * (p.idle*elapsed + (p.board-p.idle)*busy)
}

// watts is one GPU's power draw now: board while a step runs, else idle.
func (p *power) watts() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.now() < p.busyUntil {
		return p.board
	}
	return p.idle
}

// register adds one power gauge and one energy counter per GPU to reg,
// labelled as dcgm-exporter labels them.
func (p *power) register(reg *prometheus.Registry, gpuName string) {
	for i := range p.gpus {
		labels := prometheus.Labels{"gpu": strconv.Itoa(i), "UUID": "GPU-servebench-" + gpuName + "-" + strconv.Itoa(i),
			"device": "nvidia" + strconv.Itoa(i), "modelName": gpuName}
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: dcgmPower, Help: "Power draw (in W).", ConstLabels: labels}, p.watts))
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: dcgmEnergy,
			Help: "Total energy consumption since boot (in mJ).", ConstLabels: labels}, p.energyMJ))
	}
}
