// Package countersql holds the SQL script of the logbench_counter extension (README.md
// in the folder above), which CREATE EXTENSION runs, and gives it to logbench to create
// the extension's functions in a server that preloads the library without the
// extension being installed there. The script lives here rather than beside the C
// source because Go builds no package from a folder holding C files without cgo.
package countersql

import (
	_ "embed"
	"strings"
)

// Schema holds the extension's functions, as CREATE EXTENSION creates them.
const Schema = "logbench_counter"

// Library is the extension's shared library, as shared_preload_libraries names it.
const Library = "logbench_counter"

//go:embed logbench_counter--1.0.sql
var script string

// FunctionsSQL creates the schema and the extension's functions, bound to the library
// at libraryPath (the path without its suffix, as CREATE FUNCTION's AS takes it): what
// CREATE EXTENSION does, for a server whose installation does not have the extension's
// control and SQL files. It runs as one multi-statement string.
func FunctionsSQL(libraryPath string) string {
	var lines []string
	for line := range strings.SplitSeq(script, "\n") {
		// psql's guard against running the script outside CREATE EXTENSION
		if !strings.HasPrefix(line, `\echo`) {
			lines = append(lines, line)
		}
	}
	body := strings.ReplaceAll(strings.Join(lines, "\n"), "MODULE_PATHNAME", strings.ReplaceAll(libraryPath, "'", "''"))
	return "CREATE SCHEMA " + Schema + "; SET LOCAL search_path = " + Schema + ";\n" + body
}
