//! Kernel network settings that cap load tests, from `/proc/sys/net`.

use dyno_model::Network;

use crate::root::Root;

/// Reads `net.core.somaxconn`, `net.ipv4.ip_local_port_range` and
/// `net.ipv4.tcp_tw_reuse`.
pub(crate) fn capture(root: Root<'_>) -> Network {
    Network {
        somaxconn: root.parse("proc/sys/net/core/somaxconn"),
        ephemeral_ports: root
            .read("proc/sys/net/ipv4/ip_local_port_range")
            .and_then(|text| parse_port_range(&text)),
        tcp_tw_reuse: root.parse("proc/sys/net/ipv4/tcp_tw_reuse"),
    }
}

/// `32768\t60999` as `[32768, 60999]`; `None` unless there are exactly two
/// ports in order.
pub(crate) fn parse_port_range(text: &str) -> Option<[u16; 2]> {
    let mut ports = text.split_ascii_whitespace().map(str::parse::<u16>);
    let range = [ports.next()?.ok()?, ports.next()?.ok()?];
    (ports.next().is_none() && range[0] <= range[1]).then_some(range)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_ranges() {
        assert_eq!(parse_port_range("32768\t60999\n"), Some([32768, 60999]));
        assert_eq!(parse_port_range("1024 65535"), Some([1024, 65535]));
        assert_eq!(parse_port_range("32768\n"), None);
        assert_eq!(parse_port_range("60999\t32768\n"), None);
        assert_eq!(parse_port_range("1024 70000"), None);
        assert_eq!(parse_port_range("1 2 3"), None);
    }

    #[test]
    fn sysctls() {
        let dir = tempfile::tempdir().unwrap();
        let net = dir.path().join("proc/sys/net");
        std::fs::create_dir_all(net.join("core")).unwrap();
        std::fs::create_dir_all(net.join("ipv4")).unwrap();
        std::fs::write(net.join("core/somaxconn"), "4096\n").unwrap();
        std::fs::write(net.join("ipv4/ip_local_port_range"), "32768\t60999\n").unwrap();
        std::fs::write(net.join("ipv4/tcp_tw_reuse"), "2\n").unwrap();
        assert_eq!(
            capture(Root::new(dir.path())),
            Network {
                somaxconn: Some(4096),
                ephemeral_ports: Some([32768, 60999]),
                tcp_tw_reuse: Some(2),
            }
        );
        std::fs::write(net.join("core/somaxconn"), "many\n").unwrap();
        std::fs::write(net.join("ipv4/tcp_tw_reuse"), "-1\n").unwrap();
        assert_eq!(
            capture(Root::new(dir.path())),
            Network {
                somaxconn: None,
                ephemeral_ports: Some([32768, 60999]),
                tcp_tw_reuse: None,
            }
        );
    }
}
