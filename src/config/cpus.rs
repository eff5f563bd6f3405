//! The CPUs a config names (`cpus = "0-3"`) and those this process may run on.

use crate::error::UsageError;
use toml::Spanned;

/// `cpus = "1"`, `"0-3"`, `"0,2"`, `1` or `[0, 1]`: the CPUs to pin runs to, each one this
/// process may run on.
pub(super) fn cpus(v: &Spanned<toml::Value>, key: &str, at: &str) -> anyhow::Result<Vec<usize>> {
    let bad = |why: String| UsageError::err(format!("{at}: key `{key}`: {why}"));
    let mut out: Vec<usize> = Vec::new();
    let mut add = |c: i64| -> anyhow::Result<()> {
        if !(0..1024).contains(&c) {
            return Err(bad(format!("CPU {c} is out of range (0 to 1023)")));
        }
        out.push(c as usize);
        Ok(())
    };
    match v.get_ref() {
        toml::Value::Integer(i) => add(*i)?,
        toml::Value::Array(a) => {
            for x in a {
                match x.as_integer() {
                    Some(i) => add(i)?,
                    None => return Err(bad(format!("`{x}` is not a CPU number"))),
                }
            }
        }
        toml::Value::String(s) => {
            for part in s.split(',').map(str::trim) {
                let num = |t: &str| {
                    t.trim().parse::<i64>().map_err(|_| {
                        bad(format!(
                            "`{s}` is not a list of CPUs (\"1\", \"0-3\", \"0,2\")"
                        ))
                    })
                };
                match part.split_once('-') {
                    Some((a, b)) => {
                        let (a, b) = (num(a)?, num(b)?);
                        if a > b {
                            return Err(bad(format!("`{part}` is an empty range")));
                        }
                        for c in a..=b {
                            add(c)?;
                        }
                    }
                    None => add(num(part)?)?,
                }
            }
        }
        other => return Err(bad(format!("`{other}` is not a CPU list"))),
    }
    out.sort_unstable();
    out.dedup();
    if out.is_empty() {
        return Err(bad("no CPU given".into()));
    }
    let allowed = available_cpus();
    if let Some(c) = out.iter().find(|c| !allowed.contains(c)) {
        return Err(bad(format!(
            "CPU {c} is not one this machine lets perfbisect run on (it may use {})",
            cpu_list(&allowed)
        )));
    }
    Ok(out)
}

/// The CPUs this process may run on (`sched_getaffinity`).
pub fn available_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is valid; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let ok =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if ok != 0 {
        return (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect();
    }
    // SAFETY: CPU_ISSET reads a valid set.
    (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// `0-3,6` for a sorted list of CPUs.
pub fn cpu_list(cpus: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if j > i {
            format!("{}-{}", cpus[i], cpus[j])
        } else {
            cpus[i].to_string()
        });
        i = j + 1;
    }
    parts.join(",")
}
