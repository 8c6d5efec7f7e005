module github.com/xdpcac/xdpcac

go 1.26.0

require (
	github.com/cilium/ebpf v0.22.0
	github.com/spf13/cobra v1.10.2
	github.com/vishvananda/netlink v1.3.1
	github.com/vishvananda/netns v0.0.5
	go.yaml.in/yaml/v3 v3.0.6
	golang.org/x/sys v0.50.0
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/pflag v1.0.10 // indirect
)

tool github.com/cilium/ebpf/cmd/bpf2go
