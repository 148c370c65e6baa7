/** An error that ends a command with a one-line reason on stderr and the given exit code. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = 2,
  ) {
    super(message);
    this.name = "CliError";
  }
}
