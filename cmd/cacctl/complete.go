package main

import (
	"slices"

	"github.com/spf13/cobra"
	"github.com/vishvananda/netlink"
	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/loader"
)

// Shell completion of what an operator types: interfaces, classes,
// reasons and session agents. Each reads what it can without failing the
// shell: nothing to offer is no completion, never an error.

type completion = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective)

// completeAttached offers the interfaces the filter is attached to.
func completeAttached(g *globals) completion {
	return func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		atts, _ := loader.List(g.stateDir)
		var names []string
		for _, a := range atts {
			if a.Netns == g.netns {
				names = append(names, a.Iface)
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeInterfaces offers the interfaces of the namespace.
func completeInterfaces(g *globals) completion {
	return func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		loader.InNetns(g.netns, func() error {
			links, err := netlink.LinkList()
			for _, l := range links {
				names = append(names, l.Attrs().Name)
			}
			return err
		})
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeAgents offers the session agents the running daemon watches.
func completeAgents(g *globals) completion {
	return func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		c := api.Dial(g.stateDir)
		if len(args) > 0 || c == nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		v, _ := c.Agents()
		var names []string
		for _, r := range v.Targets {
			if !slices.Contains(names, r.Agent) {
				names = append(names, r.Agent)
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

func classNames() []string {
	var out []string
	for _, c := range cac.Classes() {
		out = append(out, c.String())
	}
	return out
}

func reasonNames() []string {
	var out []string
	for _, r := range cac.Reasons() {
		out = append(out, r.String())
	}
	for _, r := range cac.EgressReasons() {
		if !slices.Contains(out, r.String()) { // capacity is both
			out = append(out, r.String())
		}
	}
	return out
}

// completeWords offers a fixed list.
func completeWords(words []string) completion {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return words, cobra.ShellCompDirectiveNoFileComp
	}
}
