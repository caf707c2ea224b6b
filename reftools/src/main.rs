//! `ptxc-tools`: provision and locate the pinned NVIDIA reference tools.
//!
//! ```text
//! ptxc-tools provision      # download + unpack (idempotent), print paths and versions
//! ptxc-tools path ptxas     # print one tool's path
//! ptxc-tools env            # print `export PTXAS=...` lines for a shell
//! ```

use ptxc_reftools::{Tool, find, provision, versions_summary};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        [] | ["provision"] => provision().and_then(|chain| {
            println!("reference tools in {}", chain.root.display());
            for tool in Tool::ALL {
                println!("  {:<9} {}", tool.binary_name(), find(tool)?.display());
            }
            print!("{}", versions_summary()?);
            Ok(())
        }),
        ["path", name] => match Tool::from_name(name) {
            Some(tool) => find(tool).map(|p| println!("{}", p.display())),
            None => return usage(),
        },
        ["env"] => Tool::ALL.into_iter().try_for_each(|tool| {
            find(tool).map(|p| println!("export {}={}", tool.env_var(), p.display()))
        }),
        _ => return usage(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ptxc-tools: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn usage() -> ExitCode {
    eprintln!("usage: ptxc-tools [provision | path ptxas|nvdisasm|cuobjdump|nvcc | env]");
    ExitCode::from(2)
}
