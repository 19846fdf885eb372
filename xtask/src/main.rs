//! `cargo xtask <command>`: the project's automation, in Rust so it runs wherever cargo does.
//!
//! * `test` — installs what the tests need on this machine, then runs the formatter check,
//!   clippy with warnings denied, and every test of the workspace (unit, integration, doc).
//!   This is the one command CI runs (`.ci/run`).

use std::env;
use std::process::{Command, ExitCode};
use std::time::Instant;

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  test [--no-lint] [-- <cargo test args>]
        check formatting, run clippy (-D warnings) and every test of the workspace;
        --no-lint skips the formatting and clippy steps
  help  print this message";

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("test") => test(&args[1..]),
        Some("help" | "--help" | "-h") | None => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(format!("unknown command `{other}`\n\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// One step of a task: a cargo invocation with a name for the log.
struct Step {
    name: &'static str,
    args: Vec<String>,
}

impl Step {
    fn new(name: &'static str, args: &[&str]) -> Self {
        Step {
            name,
            args: args.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    fn run(&self) -> Result<(), String> {
        let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        println!("xtask: == {} == cargo {}", self.name, self.args.join(" "));
        let start = Instant::now();
        let status = Command::new(&cargo)
            .args(&self.args)
            .status()
            .map_err(|e| format!("could not start `{cargo}`: {e}"))?;
        println!("xtask: {} took {:.1} s", self.name, start.elapsed().as_secs_f64());
        if status.success() {
            Ok(())
        } else {
            Err(format!("step `{}` failed ({status})", self.name))
        }
    }
}

fn test(args: &[String]) -> Result<(), String> {
    let (own, passthrough) = match args.iter().position(|a| a == "--") {
        Some(split) => (&args[..split], &args[split + 1..]),
        None => (args, &[][..]),
    };
    let mut lint = true;
    for arg in own {
        match arg.as_str() {
            "--no-lint" => lint = false,
            other => return Err(format!("unknown option `{other}` for `test`\n\n{USAGE}")),
        }
    }
    let mut steps = Vec::new();
    if lint {
        steps.push(Step::new("format", &["fmt", "--all", "--", "--check"]));
        steps.push(Step::new(
            "clippy",
            &["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"],
        ));
    }
    let mut test = Step::new("tests", &["test", "--workspace"]);
    test.args.extend(passthrough.iter().cloned());
    steps.push(test);

    let start = Instant::now();
    for step in &steps {
        step.run()?;
    }
    println!(
        "xtask: all steps passed in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
