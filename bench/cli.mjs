// The benches' command lines: `--name value` options, --help prints the usage.
export function commandLine(usage, argv = process.argv.slice(2)) {
  if (argv.includes('--help')) {
    console.log(usage);
    process.exit(0);
  }
  return {
    option(name, fallback) {
      const at = argv.indexOf(name);
      return at < 0 ? fallback : argv[at + 1];
    },
    fail() {
      console.error(usage);
      process.exit(2);
    },
  };
}
