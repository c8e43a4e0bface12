// compose-config: `docker compose config --format json` without Docker. It loads a compose file
// with compose-go, the library docker compose itself loads files with, so the file is checked the
// same way: the Compose Specification's JSON schema, variable interpolation (a `${VAR:?message}`
// that is unset fails with its message), and the consistency of references (depends_on, networks,
// volumes). On success it prints the resolved project as JSON; on a problem it prints it and exits 1.
//
//	compose-config <compose file>      (the environment supplies the variables; no .env is read)
//
// Built into .tools/ by scripts/compose-config.sh; test/deploy/files.test.ts runs it on
// deploy/compose.yaml.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/compose-spec/compose-go/v2/cli"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: compose-config <compose file>")
		os.Exit(2)
	}
	options, err := cli.NewProjectOptions([]string{os.Args[1]}, cli.WithOsEnv, cli.WithConsistency(true), cli.WithResolvedPaths(true))
	if err != nil {
		fail(err)
	}
	loaded, err := options.LoadProject(context.Background())
	if err != nil {
		fail(err)
	}
	out, err := loaded.MarshalJSON()
	if err != nil {
		fail(err)
	}
	os.Stdout.Write(append(out, '\n'))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
