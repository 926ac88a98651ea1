//! The `shakedown` binary: parses the command line, runs the command, maps outcomes to exit codes
//! (0 valid, 1 invalid, 2 unknown, 3 usage/configuration error, 4 runtime error).

use clap::Parser;
use shakedown::cli::{Cli, Command, EXIT_RUNTIME, EXIT_USAGE, LazyfsAction, SandboxAction};
use std::process::ExitCode;

/// mimalloc instead of glibc's malloc: a run allocates a few small objects per op (history
/// records, op futures, protocol buffers) and glibc's free lists and chunk consolidation were
/// about 0.7 us of CPU per op on the Redis bench; the checkers allocate heavily too.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_USAGE } else { 0 };
            let _ = e.print();
            return ExitCode::from(code as u8);
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        // Colour codes only on a terminal: redirected logs stay plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let code = match cli.command {
        Command::Run(args) => shakedown::app::run(*args),
        Command::Check(args) => {
            // `check … | head`: end quietly when the reader goes away, like other filters. Only
            // for check, which changes nothing: a run or heal must never die half-way from a
            // closed pipe (its prints fail instead, and it still heals).
            // SAFETY: restoring the default disposition of SIGPIPE before any thread writes.
            unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
            shakedown::app::check(args)
        }
        Command::Export(args) => shakedown::app::export(args),
        Command::Sandbox(s) => match s.sandbox.to_config() {
            Err(e) => {
                eprintln!("error: {e}");
                EXIT_USAGE
            }
            Ok(cfg) => shakedown::app::sandbox(
                cfg,
                matches!(s.action, SandboxAction::Up),
                matches!(s.action, SandboxAction::Down),
            ),
        },
        Command::Bench(args) => shakedown::app::bench(args),
        Command::Heal(args) => shakedown::app::heal(args),
        Command::Doctor(args) => shakedown::app::doctor(args),
        Command::Report(args) => shakedown::app::report(args),
        Command::Serve(args) => shakedown::app::serve(args),
        Command::Compare(args) => shakedown::app::compare(args),
        Command::Chaos(args) => shakedown::app::chaos(*args),
        Command::Lazyfs(cmd) => lazyfs(cmd.action),
        Command::Netdelay(a) => netdelay(a),
    };
    let _ = EXIT_RUNTIME;
    ExitCode::from(code as u8)
}

/// `shakedown netdelay`: delays queued packets until SIGTERM; 0, or 4 with the error on stderr.
fn netdelay(a: shakedown::cli::NetdelayArgs) -> i32 {
    let o = shakedown::netdelay::ServeOptions {
        queue: a.queue,
        delay_ms: a.delay_ms,
        jitter_ms: a.jitter_ms,
        reorder: a.reorder,
        seed: a.seed,
        max_queued: a.max_queued,
    };
    match shakedown::netdelay::serve(&o) {
        Ok(_) => 0,
        Err(e) => {
            eprintln!("error: netdelay: {e}");
            EXIT_RUNTIME
        }
    }
}

/// `shakedown lazyfs serve|ctl`: 0 on success, 4 with the error on stderr.
fn lazyfs(action: LazyfsAction) -> i32 {
    let r = match action {
        LazyfsAction::Serve {
            backing,
            mount,
            control,
        } => shakedown::lazyfs::serve(&shakedown::lazyfs::ServeOptions {
            backing,
            mount,
            control,
        }),
        LazyfsAction::Ctl { control, command } => {
            shakedown::lazyfs::command(&control, &command.join(" ")).map(|v| println!("{v}"))
        }
    };
    match r {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: lazyfs: {e}");
            EXIT_RUNTIME
        }
    }
}
