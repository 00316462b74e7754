// Command crosscheck type-checks packages, every dependency included, from source for
// platforms other than this machine's: it rejects what a cross build would (a symbol
// one platform lacks, a file its build tags leave out) without compiling anything, for
// a fraction of a cross build's CPU. make test runs it for the release's platforms
// whose archives it does not build.
//
// Usage: go run ./hack/crosscheck -platforms GOOS/GOARCH[,...] PACKAGE...
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"golang.org/x/tools/go/packages"
)

func main() {
	platforms := flag.String("platforms", "", "comma-separated GOOS/GOARCH pairs to type-check for")
	flag.Parse()
	if *platforms == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: crosscheck -platforms GOOS/GOARCH[,...] PACKAGE...")
		os.Exit(2)
	}
	failed := false
	for platform := range strings.SplitSeq(*platforms, ",") {
		goos, goarch, ok := strings.Cut(platform, "/")
		if !ok {
			fmt.Fprintf(os.Stderr, "crosscheck: platform %q is not GOOS/GOARCH\n", platform)
			os.Exit(2)
		}
		if errors := check(goos, goarch, flag.Args()); errors > 0 {
			fmt.Fprintf(os.Stderr, "crosscheck: %d errors for %s\n", errors, platform)
			failed = true
			continue
		}
		fmt.Printf("crosscheck: %s type-checks\n", platform)
	}
	if failed {
		os.Exit(1)
	}
}

// check type-checks patterns for goos/goarch, with CGO off as the release builds them,
// and prints the errors it counts.
func check(goos, goarch string, patterns []string) int {
	config := &packages.Config{
		// Syntax and types for every dependency: type-checked from source, where export
		// data would need a compiler run per package.
		Mode: packages.NeedName | packages.NeedImports | packages.NeedDeps | packages.NeedSyntax | packages.NeedTypes,
		Env:  append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0"),
	}
	loaded, err := packages.Load(config, patterns...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "crosscheck: %s/%s: %v\n", goos, goarch, err)
		return 1
	}
	return packages.PrintErrors(loaded)
}
