//! Running the real `openspec` CLI: probing it (`--version`) and calling
//! `new change` and `archive`. Telemetry is always switched off, since
//! clawmux never lets a child process reach an outside host on its behalf.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};

/// The program name looked up on PATH.
pub const OPENSPEC_BIN: &str = "openspec";
/// Printed when a project has `openspec/` but the CLI is missing.
pub const INSTALL_HINT: &str = "npm i -g @fission-ai/openspec";

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("cannot run `{program}`: {source} (install it with `{INSTALL_HINT}`)")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("`{command}` failed ({status}):\n{stderr}{stdout}")]
    Failed {
        command: String,
        status: String,
        stdout: String,
        stderr: String,
    },
}

/// A handle on one `openspec` executable.
#[derive(Debug, Clone)]
pub struct OpenSpecCli {
    program: String,
}

impl Default for OpenSpecCli {
    fn default() -> Self {
        Self {
            program: OPENSPEC_BIN.to_string(),
        }
    }
}

impl OpenSpecCli {
    /// A CLI at an explicit path (tests, or a non-PATH install).
    pub fn at(program: impl Into<String>) -> Self {
        Self {
            program: program.into(),
        }
    }

    fn command(&self, dir: &Path) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.current_dir(dir)
            .env("OPENSPEC_TELEMETRY", "0")
            .env("DO_NOT_TRACK", "1");
        cmd
    }

    /// `openspec --version`, when the CLI answers.
    pub fn version(&self) -> Option<String> {
        let out = self
            .command(Path::new("."))
            .arg("--version")
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// Runs `openspec <args>` in `dir`; a non-zero exit is an error carrying
    /// both output streams verbatim.
    pub fn run<I, S>(&self, dir: &Path, args: I) -> Result<Output, CliError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<S> = args.into_iter().collect();
        let shown: Vec<String> = args
            .iter()
            .map(|a| a.as_ref().to_string_lossy().into_owned())
            .collect();
        let command = format!("{} {}", self.program, shown.join(" "));
        let out = self
            .command(dir)
            .args(&args)
            .output()
            .map_err(|source| CliError::Spawn {
                program: self.program.clone(),
                source,
            })?;
        if out.status.success() {
            Ok(out)
        } else {
            Err(CliError::Failed {
                command,
                status: out.status.to_string(),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            })
        }
    }
}
