import Crypto
import Foundation
import Marquee

/// This box's name in proof-of-play records when the operator gives none: derived from the
/// machine id (`/etc/machine-id`, drawn at a system's first boot), so it stays through
/// restarts and re-installs of the player, differs between boxes flashed from one image (each
/// draws its own at first boot), and does not reveal the machine id itself (it is an HMAC of
/// it, as `sd_id128_get_machine_app_specific` does). Without a machine id: the host name.
public enum BoxIdentity {
    /// `box-` and 16 hex digits of HMAC-SHA256(machine id, "marquee box id").
    public static func stable(machineID: String? = nil) -> String {
        let id = (machineID ?? (try? String(contentsOfFile: "/etc/machine-id", encoding: .utf8)) ?? "")
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard id.count >= 16 else { return ProcessInfo.processInfo.hostName }
        let mac = HMAC<SHA256>.authenticationCode(
            for: Data("marquee box id".utf8), using: SymmetricKey(data: Data(id.utf8)))
        return "box-" + Data(mac).prefix(8).map { String(format: "%02x", $0) }.joined()
    }
}
