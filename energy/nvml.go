//go:build linux && cgo && nvml

package energy

import (
	"fmt"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// gpu is one NVIDIA GPU's total-energy counter (mJ since the driver
// loaded; Volta and newer).
type gpu struct {
	name  string
	dev   nvml.Device
	limit uint64 // enforced power limit, µW
}

func (g *gpu) Name() string       { return g.name }
func (g *gpu) RangeUJ() uint64    { return 0 }
func (g *gpu) MaxPowerUW() uint64 { return g.limit }

func (g *gpu) ReadUJ() (uint64, error) {
	mj, ret := g.dev.GetTotalEnergyConsumption()
	if ret != nvml.SUCCESS {
		return 0, fmt.Errorf("%s: %s", g.name, nvml.ErrorString(ret))
	}
	return mul(mj, 1000), nil
}

var nvmlInit struct {
	once sync.Once
	ret  nvml.Return
}

// NVML lists NVIDIA GPUs whose energy counter answers. It dlopens
// libnvidia-ml.so.1, so a machine without the driver gets a clear error.
func NVML() ([]Counter, error) {
	nvmlInit.once.Do(func() { nvmlInit.ret = nvml.Init() })
	if nvmlInit.ret != nvml.SUCCESS {
		return nil, fmt.Errorf("NVML: %s", nvml.ErrorString(nvmlInit.ret))
	}
	n, ret := nvml.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("NVML device count: %s", nvml.ErrorString(ret))
	}
	var out []Counter
	var problems []string
	for i := 0; i < n; i++ {
		dev, ret := nvml.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			problems = append(problems, nvml.ErrorString(ret))
			continue
		}
		g := &gpu{name: fmt.Sprintf("nvml:%d", i), dev: dev}
		if name, ret := dev.GetName(); ret == nvml.SUCCESS {
			g.name += ":" + name
		}
		if mw, ret := dev.GetEnforcedPowerLimit(); ret == nvml.SUCCESS {
			g.limit = uint64(mw) * 1000
		}
		if _, err := g.ReadUJ(); err != nil { // NOT_SUPPORTED before Volta: a reason, not a zero
			problems = append(problems, err.Error())
			continue
		}
		out = append(out, g)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no NVML GPU with an energy counter: %v", problems)
	}
	return out, nil
}
