package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/xdpcac/xdpcac/internal/version"
)

// newGenDocsCmd is `cacctl gen-docs DIR`, hidden: the Debian package's
// build runs the binary it has just built to write the man pages and the
// bash completion from the command tree itself, so that what is installed
// describes that binary and no generated file is kept in the tree.
func newGenDocsCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "gen-docs DIR",
		Short:  "Write the man pages (DIR/man1) and the bash completion (DIR/bash-completion/cacctl)",
		Hidden: true,
		Args:   exactArgs("DIR"),
		// It writes files only: the root's privilege check, which a
		// package build as an ordinary user would fail, has no business
		// here. The nearest persistent hook is the one cobra runs.
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
		RunE: func(cmd *cobra.Command, args []string) error {
			return genDocs(cmd.Root(), args[0])
		},
	}
}

// genDocs writes a man page for every command of root into dir/man1 and
// the bash completion script into dir/bash-completion/cacctl. The pages'
// date is SOURCE_DATE_EPOCH's when it is set (cobra reads it), so that
// two builds of one commit make the same pages.
func genDocs(root *cobra.Command, dir string) error {
	// The generated footer would name the day of the build.
	var quiet func(*cobra.Command)
	quiet = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		for _, sub := range c.Commands() {
			quiet(sub)
		}
	}
	quiet(root)

	man := filepath.Join(dir, "man1")
	if err := os.MkdirAll(man, 0o755); err != nil {
		return fmt.Errorf("gen-docs: %w", err)
	}
	// No Title: each page takes its command's path (CACCTL-SHOW-LIMITS).
	header := &doc.GenManHeader{
		Section: "1",
		Source:  "xdpcac " + version.String(),
		Manual:  "xdpcac manual",
	}
	if err := doc.GenManTree(root, header, man); err != nil {
		return fmt.Errorf("gen-docs: man pages in %s: %w", man, err)
	}

	comp := filepath.Join(dir, "bash-completion")
	if err := os.MkdirAll(comp, 0o755); err != nil {
		return fmt.Errorf("gen-docs: %w", err)
	}
	path := filepath.Join(comp, root.Name())
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("gen-docs: %w", err)
	}
	if err := root.GenBashCompletionV2(f, true); err != nil {
		f.Close()
		return fmt.Errorf("gen-docs: bash completion %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("gen-docs: bash completion %s: %w", path, err)
	}
	return nil
}
