"""The ssh_config keywords OpenSSH knows, and how many arguments each takes (readconf.c's table).

ssh refuses a whole config file for one keyword it does not know, or one with more arguments than
it takes, so gpudeck must know every one, also those it never uses. The table is OpenSSH 9.2p1's, as
Debian builds it (the installed `ssh -G` is the oracle: GSSAPI and PKCS#11 on, Debian's GSSAPI key
exchange and keepalive patches), checked keyword by keyword against it in the tests.
"""

from __future__ import annotations

MANY = None  # any number of arguments


def _words(text: str) -> list[str]:
    return text.split()


# Deprecated, unsupported or ignored: accepted with any arguments and without effect.
_IGNORED = _words(
    "protocol cipher fallbacktorsh globalknownhostsfile2 rhostsauthentication userknownhostsfile2 "
    "useroaming usersh useprivilegedport afstokenpassing kerberosauthentication kerberostgtpassing "
    "rsaauthentication rhostsrsaauthentication compressionlevel useblacklistedkeys"
)
# The rest of the line as written (ProxyJump is checked hop by hop: ssh_jump.py).
RAW = frozenset({"proxycommand", "localcommand", "remotecommand", "knownhostscommand", "proxyjump"})
_ANY = _words(
    "host include globalknownhostsfile userknownhostsfile logverbose permitremoteopen sendenv setenv "
    "canonicaldomains canonicalizepermittedcnames"
)
_TWO = _words("rekeylimit localforward remoteforward ipqos addkeystoagent")
_ONE = _words(
    "gssapiauthentication gssapidelegatecredentials gssapikeyexchange gssapiclientidentity gssapiserveridentity "
    "gssapirenewalforcesrekey gssapitrustdns gssapikexalgorithms pkcs11provider smartcarddevice forwardagent "
    "forwardx11 forwardx11trusted forwardx11timeout exitonforwardfailure xauthlocation gatewayports "
    "passwordauthentication kbdinteractiveauthentication kbdinteractivedevices challengeresponseauthentication "
    "skeyauthentication tisauthentication pubkeyauthentication dsaauthentication hostbasedauthentication "
    "identityfile identityfile2 identitiesonly certificatefile identityagent hostname hostkeyalias port ciphers "
    "macs user escapechar connectionattempts batchmode checkhostip stricthostkeychecking compression "
    "tcpkeepalive keepalive numberofpasswordprompts syslogfacility loglevel dynamicforward "
    "preferredauthentications hostkeyalgorithms casignaturealgorithms bindaddress bindinterface "
    "clearallforwardings enablesshkeysign verifyhostkeydns nohostauthenticationforlocalhost connecttimeout "
    "addressfamily serveraliveinterval serveralivecountmax controlpath controlmaster controlpersist "
    "hashknownhosts tunnel tunneldevice permitlocalcommand visualhostkey kexalgorithms requesttty sessiontype "
    "stdinnull forkafterauthentication proxyusefdpass canonicalizefallbacklocal canonicalizehostname "
    "canonicalizemaxdots streamlocalbindmask streamlocalbindunlink revokedhostkeys fingerprinthash "
    "updatehostkeys hostbasedacceptedalgorithms hostbasedkeytypes pubkeyacceptedalgorithms "
    "pubkeyacceptedkeytypes ignoreunknown securitykeyprovider requiredrsasize enableescapecommandline "
    "protocolkeepalives setuptimeout"
)
# Added after 9.2. 9.2 refuses them, but a config written for the user's newer ssh must not be refused
# whole: accepted with any arguments (`Tag` is used: `Match tagged`, as in 9.4).
NEWER = frozenset(
    _words("tag channeltimeout obscurekeystroketiming refuseconnection versionaddendum warnweakcrypto")
)

# keyword -> the most arguments it takes (MANY: no limit); `match` is parsed apart (ssh_match.py).
ARITY: dict[str, int | None] = {
    **{k: MANY for k in (*_IGNORED, *RAW, *_ANY, *NEWER, "match")},
    **dict.fromkeys(_TWO, 2),
    **dict.fromkeys(_ONE, 1),
}
IGNORED = frozenset(_IGNORED) | NEWER - {"tag"}
# Spellings ssh reads as another keyword, for the ones gpudeck uses.
ALIASES = {"identityfile2": "identityfile", "protocolkeepalives": "serveraliveinterval"}
