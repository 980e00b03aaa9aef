//! Whether the machine is a container or a virtual machine, detected from
//! files alone (no `systemd-detect-virt` child process).
//!
//! The rules are documented on [`crate::capture_from`], where users of the
//! crate see them.

use crate::cpuinfo::CpuInfo;
use crate::root::Root;

/// Applies the rules documented on [`crate::capture_from`].
pub(crate) fn detect(root: Root<'_>, cpuinfo: Option<&CpuInfo>) -> Option<String> {
    if let Some(container) = container(root) {
        return Some(container);
    }
    if root
        .read_value("proc/sys/kernel/osrelease")
        .is_some_and(|release| release.to_ascii_lowercase().contains("microsoft"))
    {
        return Some("wsl".to_owned());
    }
    if let Some(kind) = root.read_value("sys/hypervisor/type") {
        return Some(kind);
    }
    let flags = cpuinfo.and_then(CpuInfo::x86_flags);
    let hypervisor_flag =
        flags.is_some_and(|f| f.split_ascii_whitespace().any(|f| f == "hypervisor"));
    let vendor = root.read_value("sys/class/dmi/id/sys_vendor");
    let product = root.read_value("sys/class/dmi/id/product_name");
    let dmi = dmi_hypervisor(
        vendor.as_deref().unwrap_or(""),
        product.as_deref().unwrap_or(""),
    );
    match dmi {
        Some((name, always_virtual)) if always_virtual || hypervisor_flag => Some(name.to_owned()),
        _ if hypervisor_flag => Some("vm".to_owned()),
        _ if flags.is_some() => Some("none".to_owned()),
        _ => None,
    }
}

/// The container technology, if any marker says there is one.
fn container(root: Root<'_>) -> Option<String> {
    if root.exists(".dockerenv") {
        return Some("docker".to_owned());
    }
    if root.exists("run/.containerenv") {
        return Some("podman".to_owned());
    }
    if let Some(environ) = root.read_bytes("proc/1/environ")
        && let Some(name) = container_from_environ(&environ)
    {
        return Some(name);
    }
    container_from_cgroup(&root.read("proc/1/cgroup")?).map(str::to_owned)
}

/// `NAME` from a `container=NAME` entry of a NUL-separated environment.
fn container_from_environ(environ: &[u8]) -> Option<String> {
    environ.split(|&b| b == 0).find_map(|entry| {
        let name = entry.strip_prefix(b"container=")?;
        let name = std::str::from_utf8(name).ok()?.trim();
        (!name.is_empty()).then(|| name.to_owned())
    })
}

/// The container technology named in PID 1's cgroup paths. On cgroup v2
/// with a cgroup namespace PID 1 sees only `0::/`, so this often finds
/// nothing; the other markers cover that case.
fn container_from_cgroup(cgroup: &str) -> Option<&'static str> {
    // Kubernetes pods run under docker or containerd, so look for it first.
    ["kubepods", "docker", "lxc"]
        .into_iter()
        .find(|needle| cgroup.contains(needle))
        .map(|needle| match needle {
            "kubepods" => "kubernetes",
            other => other,
        })
}

/// The hypervisor that DMI's vendor and product names point to, and whether
/// only virtual machines report it (`false` for clouds that also rent bare
/// metal, where only the `hypervisor` flag tells the two apart).
fn dmi_hypervisor(vendor: &str, product: &str) -> Option<(&'static str, bool)> {
    let vendor = vendor.to_ascii_lowercase();
    let product = product.to_ascii_lowercase();
    let either = |needle: &str| vendor.contains(needle) || product.contains(needle);
    Some(if product.contains("kvm") || vendor.contains("kubevirt") {
        ("kvm", true)
    } else if vendor.contains("qemu") {
        ("qemu", true)
    } else if either("vmware") {
        ("vmware", true)
    } else if product.contains("virtualbox") || vendor.contains("innotek") {
        ("virtualbox", true)
    } else if vendor.contains("xen") || product.contains("hvm domu") {
        ("xen", true)
    } else if vendor.contains("microsoft") && product.contains("virtual machine") {
        ("microsoft", true)
    } else if either("google") {
        ("google", true)
    } else if either("parallels") {
        ("parallels", true)
    } else if vendor.contains("bochs") {
        ("bochs", true)
    } else if vendor.contains("bhyve") {
        ("bhyve", true)
    } else if vendor.contains("amazon") {
        ("amazon", false)
    } else {
        return None;
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::cpuinfo::tests::{RASPBERRY_PI, X86_VM};

    const BARE_METAL: &str = "processor\t: 0\nflags\t\t: fpu vme de pse tsc msr avx2\n";

    fn write(root: &Path, relative: &str, text: &str) {
        let path = root.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn detect_in(files: &[(&str, &str)], cpuinfo: Option<&str>) -> Option<String> {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            write(dir.path(), path, text);
        }
        let info = cpuinfo.map(CpuInfo::parse);
        detect(Root::new(dir.path()), info.as_ref())
    }

    fn dmi<'a>(vendor: &'a str, product: &'a str) -> [(&'static str, &'a str); 2] {
        [
            ("sys/class/dmi/id/sys_vendor", vendor),
            ("sys/class/dmi/id/product_name", product),
        ]
    }

    #[test]
    fn containers_come_first() {
        assert_eq!(
            detect_in(&[(".dockerenv", "")], Some(X86_VM)).as_deref(),
            Some("docker")
        );
        assert_eq!(
            detect_in(
                &[("run/.containerenv", "engine=\"podman-4.9\"\n")],
                Some(BARE_METAL)
            )
            .as_deref(),
            Some("podman")
        );
        let environ = "PATH=/usr/bin\0container=systemd-nspawn\0TERM=xterm\0";
        assert_eq!(
            detect_in(&[("proc/1/environ", environ)], None).as_deref(),
            Some("systemd-nspawn")
        );
        let kube = "0::/kubepods/besteffort/pod1234/docker-abcdef.scope\n";
        assert_eq!(
            detect_in(&[("proc/1/cgroup", kube)], None).as_deref(),
            Some("kubernetes")
        );
        let docker = "12:cpuset:/docker/0123456789abcdef\n0::/docker/0123456789abcdef\n";
        assert_eq!(
            detect_in(&[("proc/1/cgroup", docker)], None).as_deref(),
            Some("docker")
        );
        let lxc = "0::/lxc.payload.web/init.scope\n";
        assert_eq!(
            detect_in(&[("proc/1/cgroup", lxc)], None).as_deref(),
            Some("lxc")
        );
    }

    #[test]
    fn host_cgroup_and_environ_are_not_containers() {
        let files = [
            ("proc/1/cgroup", "0::/init.scope\n"),
            ("proc/1/environ", "HOME=/\0TERM=linux\0"),
        ];
        assert_eq!(detect_in(&files, Some(BARE_METAL)).as_deref(), Some("none"));
    }

    #[test]
    fn virtual_machines() {
        let cases = [
            (dmi("QEMU", "Standard PC (Q35 + ICH9, 2009)"), "qemu"),
            (dmi("Red Hat", "KVM"), "kvm"),
            (dmi("VMware, Inc.", "VMware7,1"), "vmware"),
            (dmi("innotek GmbH", "VirtualBox"), "virtualbox"),
            (dmi("Xen", "HVM domU"), "xen"),
            (dmi("Microsoft Corporation", "Virtual Machine"), "microsoft"),
            (dmi("Google", "Google Compute Engine"), "google"),
            (dmi("Amazon EC2", "m6i.large"), "amazon"),
            (dmi("Dell Inc.", "PowerEdge R650"), "vm"),
        ];
        for (files, expected) in cases {
            assert_eq!(
                detect_in(&files, Some(X86_VM)).as_deref(),
                Some(expected),
                "{files:?}"
            );
        }
        // The flag alone.
        assert_eq!(detect_in(&[], Some(X86_VM)).as_deref(), Some("vm"));
    }

    #[test]
    fn dmi_without_the_flag() {
        // An ARM guest: no x86 flags, but the firmware says QEMU.
        assert_eq!(
            detect_in(&dmi("QEMU", "KVM Virtual Machine"), Some(RASPBERRY_PI)).as_deref(),
            Some("kvm")
        );
        // A metal instance: Amazon's firmware, no hypervisor flag.
        assert_eq!(
            detect_in(&dmi("Amazon EC2", "m5.metal"), Some(BARE_METAL)).as_deref(),
            Some("none")
        );
        assert_eq!(
            detect_in(&dmi("Dell Inc.", "PowerEdge R650"), Some(BARE_METAL)).as_deref(),
            Some("none")
        );
    }

    #[test]
    fn wsl_and_xen_pv() {
        let wsl = [(
            "proc/sys/kernel/osrelease",
            "5.15.153.1-microsoft-standard-WSL2\n",
        )];
        assert_eq!(detect_in(&wsl, Some(X86_VM)).as_deref(), Some("wsl"));
        assert_eq!(
            detect_in(&[("sys/hypervisor/type", "xen\n")], None).as_deref(),
            Some("xen")
        );
    }

    #[test]
    fn unknown_without_evidence() {
        assert_eq!(detect_in(&[], None), None);
        // ARM cpuinfo has no flag that could say "none".
        assert_eq!(detect_in(&[], Some(RASPBERRY_PI)), None);
    }
}
