// The command-line arguments of a bench script: `pnpm bench:x -- --flag` hands the script a
// leading `--`, which node's parseArgs would read as the end of the options.
export function benchArgs(): string[] {
  const argv = process.argv.slice(2);
  return argv[0] === '--' ? argv.slice(1) : argv;
}
