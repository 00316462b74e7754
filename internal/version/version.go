// Package version holds the release a logbench binary was built from. Release builds set
// the three variables with -ldflags -X (the Makefile's LDFLAGS, which .goreleaser.yaml and
// the Dockerfile receive); a plain go build leaves them empty, and Get then reads the
// commit Go records from the checkout.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set by the linker: -X github.com/logbench/logbench/internal/version.Version=0.1.0 and
// likewise Commit and Date.
var (
	// Version is the release, a semantic version without the leading v.
	Version string
	// Commit is the git commit the binary was built from.
	Commit string
	// Date is when the binary was built, RFC 3339 in UTC.
	Date string
)

// devVersion is the version of builds without -ldflags, which no release carries.
const devVersion = "0.0.0-dev"

// unknown stands for a commit or date nothing recorded.
const unknown = "unknown"

// Info describes a build.
type Info struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Date    string `json:"date"`
	// GoVersion and Platform are those of the compiler and target, which every build
	// knows.
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns this binary's build: what the linker set, else the commit and commit time
// of the checkout go build stamps (vcs.revision, vcs.time), else unknown.
func Get() Info {
	return resolve(Version, Commit, Date, readBuildSettings())
}

func resolve(version, commit, date string, settings map[string]string) Info {
	info := Info{
		Version:   version,
		Commit:    commit,
		Date:      date,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
	if info.Version == "" {
		info.Version = devVersion
	}
	if info.Commit == "" {
		info.Commit = settings["vcs.revision"]
		if info.Commit != "" && settings["vcs.modified"] == "true" {
			info.Commit += "-dirty"
		}
	}
	if info.Date == "" {
		info.Date = settings["vcs.time"]
	}
	if info.Commit == "" {
		info.Commit = unknown
	}
	if info.Date == "" {
		info.Date = unknown
	}
	return info
}

func readBuildSettings() map[string]string {
	settings := map[string]string{}
	if build, ok := debug.ReadBuildInfo(); ok {
		for _, setting := range build.Settings {
			settings[setting.Key] = setting.Value
		}
	}
	return settings
}

// String is what logbench version prints.
func (i Info) String() string {
	return fmt.Sprintf("version: %s\ncommit: %s\nbuilt: %s\ngo: %s %s\n",
		i.Version, i.Commit, i.Date, i.GoVersion, i.Platform)
}
