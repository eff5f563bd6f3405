//! A one-line description of the machine a measurement ran on (kernel, CPU model, cores),
//! for reports' "how it was measured".

/// "Linux 6.1.0-18-amd64 x86_64, Intel(R) Xeon(R) CPU @ 2.20GHz, 2 cores"; parts that cannot
/// be read are left out.
pub fn describe() -> String {
    let mut parts = Vec::new();
    if let Some(u) = uname() {
        parts.push(u);
    }
    if let Some(cpu) = cpu_model() {
        parts.push(cpu);
    }
    if let Ok(n) = std::thread::available_parallelism() {
        parts.push(format!("{n} core{}", if n.get() == 1 { "" } else { "s" }));
    }
    if parts.is_empty() {
        "unknown".into()
    } else {
        parts.join(", ")
    }
}

fn uname() -> Option<String> {
    // SAFETY: uname fills the struct it is given; all-zero is a valid starting value.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    let field = |f: &[libc::c_char]| -> String {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    Some(format!(
        "{} {} {}",
        field(&u.sysname),
        field(&u.release),
        field(&u.machine)
    ))
}

fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            matches!(k.trim(), "model name" | "Hardware" | "cpu model")
                .then(|| v.trim().to_string())
        })
        .filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    #[test]
    fn describes_this_machine() {
        let d = super::describe();
        assert!(d.contains("core"), "{d}");
        if cfg!(target_os = "linux") {
            assert!(d.starts_with("Linux "), "{d}");
        }
    }
}
