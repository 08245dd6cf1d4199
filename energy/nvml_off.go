//go:build !(linux && cgo && nvml)

package energy

import "errors"

// NVML lists NVIDIA GPUs as counters. This build has no NVML reader: build
// with cgo and the "nvml" tag (go build -tags nvml) to read GPU energy
// through github.com/NVIDIA/go-nvml.
func NVML() ([]Counter, error) {
	return nil, errors.New("no NVML reader in this build (build with -tags nvml and cgo for NVIDIA GPUs)")
}
