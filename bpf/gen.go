package bpf

// The generated xdp_bpfel.go and xdp_bpfel.o are committed so that building
// rocetor needs no clang; `go generate ./bpf && git diff --exit-code bpf`
// checks them wherever clang is installed. The two -I directories are
// Debian's multiarch homes of <asm/types.h> on amd64 and arm64, which
// clang -target bpf does not search; a missing one is ignored.
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu -I/usr/include/aarch64-linux-gnu" -target bpfel -type counter xdp xdp.c
