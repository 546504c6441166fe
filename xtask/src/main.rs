//! `cargo xtask`: this repository's own automation, written in Rust (the
//! `xtask` pattern) so it runs wherever cargo does, with nothing else to
//! install. `.cargo/config.toml` makes `cargo xtask` an alias of
//! `cargo run --package xtask --`.
//!
//! `cargo xtask image [--tag TAG]` builds the reference server's container
//! image (default tag `shipment-server:dev`) from `docker/Dockerfile`:
//!
//! 1. `cargo build --release -p shipment-server --features otlp` (span
//!    export on, as operators collecting traces need; the workspace's release
//!    profile, as `cargo install` builds it);
//! 2. stages the build context in `<target dir>/image-context`: the binary
//!    stripped of its symbols and debug information (112 MB with the
//!    release profile's line tables, 19 MB without), the shared
//!    libraries `ldd` says it loads, at the same paths, the machine's CA
//!    bundle, and the few files a `FROM scratch` image needs (`/etc/passwd`,
//!    `/etc/group`, `/etc/nsswitch.conf`, `/tmp`, the working directory);
//! 3. `docker build` (or `$DOCKER`, such as `podman`), and prints the
//!    image's size.
//!
//! It needs `ldd` (glibc's) and `strip` (binutils), which every machine
//! that builds the server with its C dependencies has.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

/// The tag `cargo xtask image` gives without `--tag`.
const DEFAULT_TAG: &str = "shipment-server:dev";

/// The non-root user the server runs as (docker/Dockerfile's `USER`).
const USER_ID: u32 = 10001;

/// Where the binary goes in the image (docker/Dockerfile's `ENTRYPOINT`).
const BINARY_IN_IMAGE: &str = "usr/local/bin/shipment-server";

/// Where the CA bundle goes in the image: the first place rustls's
/// platform verifier (through `openssl-probe`) looks on Linux.
const CA_BUNDLE_IN_IMAGE: &str = "etc/ssl/certs/ca-certificates.crt";

/// Where distributions keep their CA bundle: Debian and Ubuntu; Fedora and
/// RHEL; Alpine, Arch and macOS-like layouts; openSUSE.
const CA_BUNDLES: [&str; 4] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
    "/etc/ssl/ca-bundle.pem",
];

const USAGE: &str = "\
Usage: cargo xtask image [--tag TAG]

Commands:
  image    Build the reference server's container image (docker/Dockerfile)
           from the release binary; needs docker (or $DOCKER), ldd and strip

Options:
  --tag TAG    The image's tag [default: shipment-server:dev]
  -h, --help   Print this help
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let command = match parse(&args) {
        Ok(command) => command,
        Err(Usage(message)) => {
            eprintln!("error: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let result = match command {
        Task::Help => {
            print!("{USAGE}");
            Ok(())
        }
        Task::Image { tag } => image(&tag),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
enum Task {
    Help,
    Image { tag: String },
}

/// A command line that asks for nothing this program does.
#[derive(Debug, PartialEq, Eq)]
struct Usage(String);

fn parse(args: &[String]) -> Result<Task, Usage> {
    let mut args = args.iter().map(String::as_str);
    match args.next() {
        None => Err(Usage("a command is required".into())),
        Some("-h" | "--help" | "help") => Ok(Task::Help),
        Some("image") => {
            let mut tag = DEFAULT_TAG.to_owned();
            while let Some(arg) = args.next() {
                match arg {
                    "--tag" => match args.next() {
                        Some(value) if !value.is_empty() && !value.starts_with('-') => {
                            value.clone_into(&mut tag);
                        }
                        _ => return Err(Usage("--tag needs a value".into())),
                    },
                    "-h" | "--help" => return Ok(Task::Help),
                    _ => match arg.strip_prefix("--tag=") {
                        Some(value) if !value.is_empty() => value.clone_into(&mut tag),
                        Some(_) => return Err(Usage("--tag needs a value".into())),
                        None => return Err(Usage(format!("unexpected argument `{arg}`"))),
                    },
                }
            }
            Ok(Task::Image { tag })
        }
        Some(other) => Err(Usage(format!("unknown command `{other}`"))),
    }
}

/// `cargo xtask image`.
fn image(tag: &str) -> Result<(), String> {
    let started = Instant::now();
    let binary = build_server()?;
    let built = started.elapsed();
    let target_dir = binary
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| format!("{} is not in a target directory", binary.display()))?;
    let context = target_dir.join("image-context");
    stage(&binary, &context)?;
    let docker = std::env::var_os("DOCKER").unwrap_or_else(|| "docker".into());
    eprintln!(
        "     Running {} build --tag {tag}",
        docker.to_string_lossy()
    );
    run(Command::new(&docker)
        .args(["build", "--quiet", "--tag", tag])
        .arg(&context)
        .stdout(Stdio::null()))?;
    let size =
        output(Command::new(&docker).args(["image", "inspect", "--format", "{{.Size}}", tag]))?;
    let size: u64 = size
        .trim()
        .parse()
        .map_err(|_| format!("`docker image inspect` gave no size: {size}"))?;
    println!(
        "built {tag}: {:.1} MB ({size} bytes) in {:.0} s (the release build {:.0} s)",
        size as f64 / 1e6,
        started.elapsed().as_secs_f64(),
        built.as_secs_f64(),
    );
    Ok(())
}

/// Builds the release server and returns its binary's path, as cargo
/// reports it (so `CARGO_TARGET_DIR` and `build.target-dir` are followed).
fn build_server() -> Result<PathBuf, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask/ is inside the workspace");
    let mut command = Command::new(cargo);
    // What `cargo run` (and `cargo test`, for the image test) set for the
    // xtask process: build scripts that watch them (ring's) would rebuild,
    // and everything above them, whenever the release build is started
    // from here rather than from a shell.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name.starts_with("CARGO_PKG_")
            || name.starts_with("CARGO_MANIFEST_")
            || [
                "CARGO_CRATE_NAME",
                "CARGO_BIN_NAME",
                "CARGO_PRIMARY_PACKAGE",
            ]
            .contains(&&*name)
        {
            command.env_remove(&*name);
        }
    }
    let mut child = command
        .current_dir(root)
        .args([
            "build",
            "--release",
            "--package",
            "shipment-server",
            "--bin",
            "shipment-server",
            // Span export (`--otlp-endpoint`): in the image, where operators
            // collect traces, though not in the default build.
            "--features",
            "otlp",
            "--message-format=json-render-diagnostics",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let mut executable = None;
    for line in BufReader::new(stdout).lines() {
        let line = line.map_err(|e| format!("cannot read cargo's output: {e}"))?;
        let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        if message["reason"] == "compiler-artifact"
            && message["target"]["name"] == "shipment-server"
            && let Some(path) = message["executable"].as_str()
        {
            executable = Some(PathBuf::from(path));
        }
    }
    let status = child
        .wait()
        .map_err(|e| format!("cannot wait for cargo: {e}"))?;
    if !status.success() {
        return Err(format!("the release build failed ({status})"));
    }
    executable.ok_or_else(|| "cargo reported no shipment-server binary".into())
}

/// Makes the build context in `context` (emptied first).
fn stage(binary: &Path, context: &Path) -> Result<(), String> {
    if context.exists() {
        std::fs::remove_dir_all(context)
            .map_err(|e| format!("cannot empty {}: {e}", context.display()))?;
    }
    let rootfs = context.join("rootfs");

    let in_image = rootfs.join(BINARY_IN_IMAGE);
    copy(binary, &in_image)?;
    // Symbols and debug information: the release profile keeps line tables
    // for backtraces, which the image does not need (a panic still prints
    // its message and location).
    run(Command::new("strip").arg("--strip-all").arg(&in_image))?;

    for library in shared_libraries(binary)? {
        let relative = library.strip_prefix("/").unwrap_or(&library);
        // `copy` follows symbolic links: the image gets the file itself at
        // the path the loader asks for.
        copy(&library, &rootfs.join(relative))?;
    }

    let bundle = CA_BUNDLES
        .iter()
        .map(Path::new)
        .find(|p| p.is_file())
        .ok_or_else(|| {
            format!(
                "no CA bundle on this machine (looked at {}): install ca-certificates",
                CA_BUNDLES.join(", ")
            )
        })?;
    copy(bundle, &rootfs.join(CA_BUNDLE_IN_IMAGE))?;

    let mut passwd = String::from("root:x:0:0:root:/root:/sbin/nologin\n");
    let _ = writeln!(
        passwd,
        "shipment:x:{USER_ID}:{USER_ID}:shipment-server:/data:/sbin/nologin"
    );
    write(&rootfs.join("etc/passwd"), &passwd)?;
    write(
        &rootfs.join("etc/group"),
        &format!("root:x:0:\nshipment:x:{USER_ID}:\n"),
    )?;
    // Without this file glibc's default is `hosts: dns [!UNAVAIL=return]
    // files`: /etc/hosts is read only when no DNS server can be reached, so
    // the names `docker run --add-host` writes there (host.docker.internal)
    // would not resolve.
    write(&rootfs.join("etc/nsswitch.conf"), "hosts: files dns\n")?;
    // SQLite's temporary files (large sorts, an in-memory database that
    // spills) go to /tmp, which a scratch image lacks.
    make_dir(&rootfs.join("tmp"), 0o1777)?;
    make_dir(&context.join("data"), 0o755)?;

    let dockerfile = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docker/Dockerfile");
    copy(&dockerfile, &context.join("Dockerfile"))?;
    Ok(())
}

/// The shared libraries `binary` loads, as `ldd` resolves them on this
/// machine (the dynamic loader included; the vDSO, which the kernel
/// provides, left out).
fn shared_libraries(binary: &Path) -> Result<Vec<PathBuf>, String> {
    let listing = output(Command::new("ldd").arg(binary))?;
    let libraries = parse_ldd(&listing)?;
    if libraries.is_empty() {
        return Err(format!("`ldd` listed no library:\n{listing}"));
    }
    Ok(libraries)
}

/// The paths in `ldd`'s listing: `libc.so.6 => /lib/…/libc.so.6 (0x…)`
/// and `/lib64/ld-linux-x86-64.so.2 (0x…)`; an unresolved `not found`
/// library is an error.
fn parse_ldd(listing: &str) -> Result<Vec<PathBuf>, String> {
    let mut libraries = Vec::new();
    for line in listing.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let path = match line.split_once("=>") {
            Some((name, target)) => {
                let target = target.trim();
                if target.starts_with("not found") {
                    return Err(format!("`ldd` cannot find {}", name.trim()));
                }
                target.split(" (").next().unwrap_or(target).trim()
            }
            None => line.split(" (").next().unwrap_or(line).trim(),
        };
        if path.starts_with('/') {
            libraries.push(PathBuf::from(path));
        }
    }
    Ok(libraries)
}

fn copy(from: &Path, to: &Path) -> Result<(), String> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    std::fs::copy(from, to)
        .map(drop)
        .map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), to.display()))
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn make_dir(path: &Path, mode: u32) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::create_dir_all(path)
        .and_then(|()| std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)))
        .map_err(|e| format!("cannot create {}: {e}", path.display()))
}

/// Runs `command`, which must succeed; its output goes where it was set.
fn run(command: &mut Command) -> Result<(), String> {
    let program = display(command.get_program());
    let status = command
        .status()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{program} failed ({status})"))
    }
}

/// Runs `command`, which must succeed, and returns what it printed.
fn output(command: &mut Command) -> Result<String, String> {
    let program = display(command.get_program());
    let out = command
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{program} failed ({})", out.status));
    }
    String::from_utf8(out.stdout).map_err(|_| format!("{program} printed no UTF-8"))
}

fn display(program: &OsStr) -> String {
    program.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn image_takes_a_tag_or_the_default() {
        let image = |tag: &str| Ok(Task::Image { tag: tag.into() });
        assert_eq!(parse(&args("image")), image(DEFAULT_TAG));
        assert_eq!(parse(&args("image --tag ci:1")), image("ci:1"));
        assert_eq!(parse(&args("image --tag=ci:2")), image("ci:2"));
        assert_eq!(parse(&args("image --help")), Ok(Task::Help));
        for wrong in [
            "",
            "imag",
            "image --tag",
            "image --tag=",
            "image --tag --x",
            "image x",
        ] {
            assert!(parse(&args(wrong)).is_err(), "{wrong:?}");
        }
    }

    #[test]
    fn ldd_listings_give_the_files_to_copy() {
        let listing = "\
\tlinux-vdso.so.1 (0x00007ffd6d3f2000)
\tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x00007f0a1c5a0000)
\tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x00007f0a1c4c0000)
\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f0a1c2df000)
\t/lib64/ld-linux-x86-64.so.2 (0x00007f0a1e1d4000)
";
        assert_eq!(
            parse_ldd(listing).unwrap(),
            [
                "/lib/x86_64-linux-gnu/libgcc_s.so.1",
                "/lib/x86_64-linux-gnu/libm.so.6",
                "/lib/x86_64-linux-gnu/libc.so.6",
                "/lib64/ld-linux-x86-64.so.2",
            ]
            .map(PathBuf::from)
        );
        let missing = "\tlibssl.so.3 => not found\n";
        assert!(parse_ldd(missing).unwrap_err().contains("libssl.so.3"));
    }
}
