//! `/proc/cpuinfo`: blocks of `key : value` lines, one block per logical CPU
//! (plus, on some ARM boards, a trailing block about the whole machine).
//!
//! The CPU module takes the model, vendor, counts and fallback frequency from
//! here; the virtualization module takes the `hypervisor` flag.

use std::collections::BTreeSet;

/// A parsed `/proc/cpuinfo`.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct CpuInfo {
    blocks: Vec<Vec<(String, String)>>,
}

impl CpuInfo {
    /// Splits the text into blank-line separated blocks of `key : value`
    /// pairs. Lines without a colon are ignored.
    pub(crate) fn parse(text: &str) -> Self {
        let mut blocks = Vec::new();
        let mut block = Vec::new();
        for line in text.lines() {
            if line.trim().is_empty() {
                if !block.is_empty() {
                    blocks.push(std::mem::take(&mut block));
                }
                continue;
            }
            if let Some((key, value)) = line.split_once(':') {
                block.push((key.trim().to_owned(), value.trim().to_owned()));
            }
        }
        if !block.is_empty() {
            blocks.push(block);
        }
        CpuInfo { blocks }
    }

    /// The first non-empty value of `key` in any block.
    pub(crate) fn first(&self, key: &str) -> Option<&str> {
        self.blocks
            .iter()
            .flatten()
            .find(|(k, v)| k == key && !v.is_empty())
            .map(|(_, v)| v.as_str())
    }

    /// The blocks that describe one logical CPU: those with a numeric
    /// `processor` entry. (Old ARM kernels also print `Processor : ARMv7 …`
    /// in a machine-wide block; the capital P and the non-numeric value keep
    /// it out.)
    fn processors(&self) -> impl Iterator<Item = &[(String, String)]> {
        self.blocks
            .iter()
            .filter(|block| {
                block
                    .iter()
                    .any(|(k, v)| k == "processor" && v.parse::<u32>().is_ok())
            })
            .map(Vec::as_slice)
    }

    /// How many logical CPUs are listed; `None` when there are none.
    pub(crate) fn processor_count(&self) -> Option<u32> {
        let count = u32::try_from(self.processors().count()).ok()?;
        (count > 0).then_some(count)
    }

    /// The `cpu MHz` of the first logical CPU, in hertz.
    pub(crate) fn first_mhz_as_hz(&self) -> Option<u64> {
        let block = self.processors().next()?;
        let mhz: f64 = value(block, "cpu MHz")?.parse().ok()?;
        (mhz.is_finite() && mhz > 0.0).then(|| (mhz * 1e6).round() as u64)
    }

    /// The x86 feature flags of the first logical CPU (`flags`). ARM's
    /// `Features` line is not returned: it never names a hypervisor, so it
    /// says nothing about virtualization.
    pub(crate) fn x86_flags(&self) -> Option<&str> {
        value(self.processors().next()?, "flags")
    }

    /// The distinct (`physical id`, `core id`) pairs, or `None` unless every
    /// logical CPU has both (many VMs and all ARM kernels print neither).
    pub(crate) fn core_pairs(&self) -> Option<BTreeSet<(u64, u64)>> {
        let mut pairs = BTreeSet::new();
        for block in self.processors() {
            let package = value(block, "physical id")?.parse().ok()?;
            let core = value(block, "core id")?.parse().ok()?;
            pairs.insert((package, core));
        }
        (!pairs.is_empty()).then_some(pairs)
    }

    /// The CPU model: `model name` (x86, some ARM), then the name of a known
    /// ARM `CPU implementer`/`CPU part`, then the board's `Hardware`.
    pub(crate) fn model(&self) -> Option<String> {
        if let Some(name) = self.first("model name") {
            return Some(name.to_owned());
        }
        let implementer = hex(self.first("CPU implementer")?);
        let part = self.first("CPU part").and_then(hex);
        if let (Some(implementer), Some(part)) = (implementer, part)
            && let Some(name) = arm_part_name(implementer, part)
        {
            return Some(name.to_owned());
        }
        self.first("Hardware").map(str::to_owned)
    }

    /// The CPU vendor: `vendor_id` (x86, s390), else the name of the ARM
    /// `CPU implementer`.
    pub(crate) fn vendor(&self) -> Option<String> {
        if let Some(vendor) = self.first("vendor_id") {
            return Some(vendor.to_owned());
        }
        let implementer = hex(self.first("CPU implementer")?)?;
        arm_implementer_name(implementer).map(str::to_owned)
    }
}

fn value<'b>(block: &'b [(String, String)], key: &str) -> Option<&'b str> {
    block
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

/// Parses `0x41`-style numbers.
fn hex(text: &str) -> Option<u32> {
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))?;
    u32::from_str_radix(digits, 16).ok()
}

/// ARM implementer codes, as `lscpu` names them.
fn arm_implementer_name(implementer: u32) -> Option<&'static str> {
    Some(match implementer {
        0x41 => "ARM",
        0x42 => "Broadcom",
        0x43 => "Cavium",
        0x46 => "Fujitsu",
        0x48 => "HiSilicon",
        0x4e => "NVIDIA",
        0x50 => "APM",
        0x51 => "Qualcomm",
        0x53 => "Samsung",
        0x56 => "Marvell",
        0x61 => "Apple",
        0x69 => "Intel",
        0xc0 => "Ampere",
        _ => return None,
    })
}

/// Names of common ARM cores (the ones found in servers, clouds and boards).
/// Unknown parts fall through to `Hardware` or `None`: better no model than a
/// wrong one.
fn arm_part_name(implementer: u32, part: u32) -> Option<&'static str> {
    Some(match (implementer, part) {
        (0x41, 0xd03) => "Cortex-A53",
        (0x41, 0xd04) => "Cortex-A35",
        (0x41, 0xd05) => "Cortex-A55",
        (0x41, 0xd07) => "Cortex-A57",
        (0x41, 0xd08) => "Cortex-A72",
        (0x41, 0xd09) => "Cortex-A73",
        (0x41, 0xd0a) => "Cortex-A75",
        (0x41, 0xd0b) => "Cortex-A76",
        (0x41, 0xd0c) => "Neoverse-N1",
        (0x41, 0xd0d) => "Cortex-A77",
        (0x41, 0xd40) => "Neoverse-V1",
        (0x41, 0xd41) => "Cortex-A78",
        (0x41, 0xd44) => "Cortex-X1",
        (0x41, 0xd46) => "Cortex-A510",
        (0x41, 0xd47) => "Cortex-A710",
        (0x41, 0xd48) => "Cortex-X2",
        (0x41, 0xd49) => "Neoverse-N2",
        (0x41, 0xd4b) => "Cortex-A78C",
        (0x41, 0xd4f) => "Neoverse-V2",
        (0x41, 0xd80) => "Cortex-A520",
        (0x41, 0xd81) => "Cortex-A720",
        (0x41, 0xd82) => "Cortex-X4",
        (0x41, 0xd84) => "Neoverse-V3",
        (0x41, 0xd8e) => "Neoverse-N3",
        (0xc0, 0xac3) => "Ampere-1",
        (0xc0, 0xac4) => "Ampere-1a",
        _ => return None,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Two logical CPUs of a cloud VM, as `/proc/cpuinfo` prints them (flags
    /// shortened).
    pub(crate) const X86_VM: &str = "\
processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 143
model name\t: Intel(R) Xeon(R) Processor
stepping\t: 8
microcode\t: 0x1
cpu MHz\t\t: 2000.000
cache size\t: 107520 KB
physical id\t: 0
siblings\t: 2
core id\t\t: 0
cpu cores\t: 2
apicid\t\t: 0
flags\t\t: fpu vme de pse tsc msr pae hypervisor lahf_lm abm avx512f
bogomips\t: 4000.00
power management:

processor\t: 1
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 143
model name\t: Intel(R) Xeon(R) Processor
cpu MHz\t\t: 2000.000
physical id\t: 0
siblings\t: 2
core id\t\t: 1
cpu cores\t: 2
flags\t\t: fpu vme de pse tsc msr pae hypervisor lahf_lm abm avx512f
power management:

";

    /// One Cortex-A72 core's block of a Raspberry Pi 4's `/proc/cpuinfo`:
    /// the cores differ in their number only.
    macro_rules! cortex_a72 {
        ($n:literal) => {
            concat!(
                "processor\t: ",
                $n,
                "
BogoMIPS\t: 108.00
Features\t: fp asimd evtstrm crc32 cpuid
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x0
CPU part\t: 0xd08
CPU revision\t: 3

"
            )
        };
    }

    /// A Raspberry Pi 4 (four Cortex-A72 cores, two shown here).
    pub(crate) const RASPBERRY_PI: &str = concat!(
        cortex_a72!(0),
        cortex_a72!(1),
        "\
Hardware\t: BCM2835
Revision\t: c03111
Serial\t\t: 10000000abcdef01
Model\t\t: Raspberry Pi 4 Model B Rev 1.1
"
    );

    #[test]
    fn x86_fields() {
        let info = CpuInfo::parse(X86_VM);
        assert_eq!(info.processor_count(), Some(2));
        assert_eq!(info.model().as_deref(), Some("Intel(R) Xeon(R) Processor"));
        assert_eq!(info.vendor().as_deref(), Some("GenuineIntel"));
        assert_eq!(info.first_mhz_as_hz(), Some(2_000_000_000));
        assert!(
            info.x86_flags()
                .unwrap()
                .split(' ')
                .any(|f| f == "hypervisor")
        );
        assert_eq!(info.core_pairs(), Some(BTreeSet::from([(0, 0), (0, 1)])));
    }

    #[test]
    fn arm_fields() {
        let info = CpuInfo::parse(RASPBERRY_PI);
        assert_eq!(info.processor_count(), Some(2));
        assert_eq!(info.model().as_deref(), Some("Cortex-A72"));
        assert_eq!(info.vendor().as_deref(), Some("ARM"));
        assert_eq!(info.first_mhz_as_hz(), None);
        assert_eq!(info.x86_flags(), None);
        assert_eq!(info.core_pairs(), None);
    }

    #[test]
    fn unknown_arm_part_falls_back_to_hardware_then_none() {
        let board = "processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xfff\n\nHardware\t: Example SoC\n";
        assert_eq!(
            CpuInfo::parse(board).model().as_deref(),
            Some("Example SoC")
        );
        let bare = "processor\t: 0\nCPU implementer\t: 0x99\nCPU part\t: 0xfff\n";
        let info = CpuInfo::parse(bare);
        assert_eq!(info.model(), None);
        assert_eq!(info.vendor(), None);
    }

    #[test]
    fn core_pairs_need_every_processor() {
        let partial = "processor\t: 0\nphysical id\t: 0\ncore id\t: 0\n\nprocessor\t: 1\n";
        assert_eq!(CpuInfo::parse(partial).core_pairs(), None);
    }

    #[test]
    fn garbage_yields_nothing() {
        let info = CpuInfo::parse("not a cpuinfo file\n\u{0}\u{1}\nprocessor: x\n");
        assert_eq!(info.processor_count(), None);
        assert_eq!(info.model(), None);
        assert_eq!(info.vendor(), None);
        assert_eq!(info.x86_flags(), None);
        assert_eq!(info.first_mhz_as_hz(), None);
    }
}
