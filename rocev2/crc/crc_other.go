//go:build !amd64

package crc

// The kernel is amd64 assembly.
var hasWide, wide = false, false

func updateWide(crc uint32, p []byte) uint32 { panic("crc: no wide kernel") }

func updateMasked(crc uint32, p []byte, or *[64]byte) uint32 { panic("crc: no wide kernel") }
