module github.com/xdpcac/xdpcac

go 1.26.8

require (
	github.com/cilium/ebpf v0.22.0
	go.yaml.in/yaml/v3 v3.0.6
)

require golang.org/x/sys v0.50.0 // indirect

tool github.com/cilium/ebpf/cmd/bpf2go
