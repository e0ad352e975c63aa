"""A passkey in a real Chromium: the DevTools protocol's virtual authenticator (the `WebAuthn`
domain), which answers navigator.credentials.create() and .get() in the page as a platform
authenticator would, user verification included.

`synced=True` makes its credentials backup eligible and backed up (a synced passkey, whose sign
count stays 0 on other devices); `prf` gives it WebAuthn's PRF extension. `credentials()` and
`add()` carry a passkey to another browser context, as a passkey provider syncs it to another
device. What the protocol cannot carry is the PRF secret: Chromium's virtual authenticator keeps
it inside and gives a carried passkey none, so on the second context the page meets a passkey
without PRF (the page's recovery code is for exactly that).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class VirtualAuthenticator:
    cdp: object  # Playwright's CDPSession of the page
    authenticator_id: str

    @classmethod
    def attach(cls, page, *, prf: bool, synced: bool = True) -> VirtualAuthenticator:
        """A virtual platform authenticator for `page`'s tab (it stays across its navigations)."""
        cdp = page.context.new_cdp_session(page)
        cdp.send("WebAuthn.enable", {"enableUI": False})
        options = {
            "protocol": "ctap2",
            "ctap2Version": "ctap2_1",
            "transport": "internal",
            "hasResidentKey": True,
            "hasUserVerification": True,
            "isUserVerified": True,
            "hasPrf": prf,
            "automaticPresenceSimulation": True,
            "defaultBackupEligibility": synced,
            "defaultBackupState": synced,
        }
        added = cdp.send("WebAuthn.addVirtualAuthenticator", {"options": options})
        return cls(cdp, added["authenticatorId"])

    def credentials(self) -> list[dict]:
        return self.cdp.send("WebAuthn.getCredentials", {"authenticatorId": self.authenticator_id})["credentials"]

    def add(self, credential: dict) -> None:
        self.cdp.send("WebAuthn.addCredential", {"authenticatorId": self.authenticator_id, "credential": credential})
