"""Size and hash facts of the harness texts of the live eras (npm 0.1.0-rc.8, 0.0.1-rc.1).

Numbers only.  Regenerate by measuring through the live bridge; tests cross-check every
number against live.
"""

from __future__ import annotations

from .facts import CURRENT_ERA, TASK_ERA
from .schema_types import TextFact

#: Pieces of the bash description: base + background-on|off + escalation.
FRAGMENTS: dict[str, TextFact] = {
    "base": TextFact(
        667, "fa83bba6036accf05528a3ddac4ab4bcae3e3518f3d997fe1526b894437120cc", 667, 197
    ),
    "background-on": TextFact(
        158, "9f6386d70f07c970916eb2ef3d6da1e5d32ee54c5c69709dc1f7df225f24b36a", 158, 51
    ),
    "background-off": TextFact(
        92, "1ba3fa5d877dd8397aea6c3f70b3a502157422b3448474712412f844ef3a75cf", 92, 22
    ),
    "escalation": TextFact(
        1011, "ebbe4a42c179456c71170559fe9cac6fa7ca5da55604170a1eea0bcadb8d0335", 1011, 254
    ),
}

#: Whole bash descriptions of the four variants (A: bg on/unconfined, B: bg on/confined,
#: C: bg off/unconfined, D: bg off/confined).
VARIANTS: dict[str, TextFact] = {
    "A": TextFact(
        825, "f7b37227848f34ad5e576d931077ffe2a52ccc3af6b0a899f17a346f136cf3c3", 825, 247
    ),
    "B": TextFact(
        1836, "c64b97e8864d53f743ca7f78da79bf858fec1dda3b71d2ca7e35ddd970a27816", 1836, 501
    ),
    "C": TextFact(
        759, "6398d93f6f7afb435162cb7e049870e74c1be773ca62e21650cadd4ceac126b4", 759, 218
    ),
    "D": TextFact(
        1770, "d6539ca13476cccbf16768fe19146d3085838957246f973b96584558ae5c5282", 1770, 472
    ),
}

#: bash parameter descriptions.
BASH_PARAMS: dict[str, TextFact] = {
    "command": TextFact(
        28, "3c53be57516f4d410ee20857720025fea9d39144c64971cb7cc84e5ff702f969", 28, 8
    ),
    "description": TextFact(
        242, "9f3a2b3342c865a48788ba45154d68c0e203dd3f65ccf157ed8f053aa46b337c", 254, 82
    ),
    "timeoutMs": TextFact(
        110, "5d8951849bacae25d2b90b9cb288d3a78232583bbf82d63d5cabc086ed63af95", 110, 27
    ),
    "workdir": TextFact(
        110, "916d5e51860ba245f8103e7e4a98ae1d1d2426b6ab9179c092cc3459dedeff49", 110, 29
    ),
    "run_in_background": TextFact(
        120, "2536a00a2b6f7e95c5b56c805f64b956c0049ce8ae365697c7059c64bf2f8948", 120, 34
    ),
    "sandbox_permissions": TextFact(
        153, "8ad5c595cd1c9289a213b8786699c07f3628b078061dedf35a71ab45d6487b67", 153, 38
    ),
    "justification": TextFact(
        118, "fb082e3b889e41706906f6707599b1d857969cbde27d0535b5ea5a32099143a1", 118, 27
    ),
}

#: Other tools, keyed "<package>:<tool>": description and parameter descriptions.
TOOLS: dict[str, dict[str, object]] = {
    "dsh-tool-jobs:job_kill": {
        "description": TextFact(
            136, "79f111cfc1c4402f93b8bf8dc3cbc0b86887e71c4dbc63add49bd5d125431392", 136, 33
        ),
        "params": {
            "job_id": TextFact(
                61, "6a3f828ed4268aa9e91e0af35f0bf2256e8804385bafc48a8caf17598d1ba57e", 61, 15
            ),
            "reason": TextFact(
                68, "7839eeccf87f05a9caa1b8e0fc730fa950378d774005d2e93c56f480a3b288a9", 68, 17
            ),
        },
    },
    "dsh-tool-jobs:job_list": {
        "description": TextFact(
            85, "68a74ebf7933c9cc22f32b65e84b490a9210468b891c39e9db83b19172948e35", 85, 23
        ),
        "params": {},
    },
    "dsh-tool-jobs:job_output": {
        "description": TextFact(
            258, "85b5e5cf93f7f770258677e9aeb2ccfeac71cccb2f0a9439955b43c47ed8924e", 258, 68
        ),
        "params": {
            "job_id": TextFact(
                61, "6a3f828ed4268aa9e91e0af35f0bf2256e8804385bafc48a8caf17598d1ba57e", 61, 15
            ),
            "wait": TextFact(
                138, "82369da955076170c16b9d5a72010f7ee002eacb79e85dcfab00eb0f42d63419", 138, 37
            ),
            "timeout_ms": TextFact(
                134, "f8103638430cba813aa0ad56ec76c4d816a19459dcb2341bf806a228f02eb7ce", 134, 34
            ),
        },
    },
    "dsh-tool-bash-persistent:bash": {
        "description": TextFact(
            153, "8a78d4e157ff07de51c3edf2e9e31bf9f35bc6e6c730385a3b03737b46908aee", 153, 35
        ),
        "params": {
            "command": TextFact(
                67, "9358dbe5fb22c7eac9dfee7c1ea99fc12624efccdcde481cb3ef47a2805f1d96", 67, 18
            ),
        },
    },
}

#: The plugin's load error for a confining executor without a sandbox policy.
LOAD_ERROR = TextFact(
    78, "47257bba57942ca4b8215292355513fec7fcf0aa039b4f407baa5eac4d527dd1", 78, 21
)

#: Sandbox-denial marker per mode, and the escalation hint (subject: command).
DENIAL_MARKERS: dict[str, TextFact] = {
    "read-only": TextFact(
        50, "f8909c9ad87697c6198e4f65bb1a95a1ee1bf1597a3e1843fd03b0322deda293", 50, 13
    ),
    "workspace-write": TextFact(
        56, "9703b1cafe0dac761046918043516d648f6249bee3b6cd551441cb676ac3bf7b", 56, 14
    ),
    "danger-full-access": TextFact(
        59, "3e46158f74aa5ee957adc14bf3c12b7ab21ad55203710e17236baa1e9b50db99", 59, 15
    ),
}
HINT_MARKER = TextFact(
    180, "bda294564f7a5abb7115f2ca928fb77a0dddff414477ce18b6fc56ab43f1a495", 180, 47
)

#: SHA-256 of each validation/approval error message after replacing every mode
#: name with ``<mode>``; lets the live path classify a real message without
#: storing its text.
MESSAGE_TEMPLATES: dict[str, str] = {
    "6361e1360ee2bd72d2aa260bfba89b39b6b6447b45c32769e0252305d9c57346": "justification-missing",
    "c926a9f322a44dc5086d68d06403227c67538e3c278b382d45ac76a82fa2e9b5": "justification-without-request",
    "9fdc5561f04e629dd643fe02c973c68886ae7289922cb41eaffc4f8c3ff5bdfa": "justification-blank",
    "1e3a9d8f69713edc8bb4fbf1b38634722536247ee12b78aeb520ff732d1dc6a3": "not-wider",
    "dfd29a78a9c89f8b53f7431f0ee707765b4c627a88fefb975916d776d59398f9": "no-approver",
    "1b4b0c53502864129d31d8ee143b6567cc5f6f6b1ed31af8b0604d867beb8a1c": "no-agent",
    "81f3281fcfc15368d1dc3a44cec684fb498461183f0e8524791b750f8a5d5ac7": "rejected",
    "9810c7f2ef9f68f01df9df752ac3055f10f08f230e0b343cfede56c148203fe4": "cancelled",
    "521d9977a532cdb788814201b3db9002bff80f6271bb915b9857c6638aac1110": "unavailable",
}


# --- the task era (npm 0.0.1-rc.1, booted with the dsh-bash stand-in) -------
# The base fragment interpolates DSH_ENV_PREFIX, which the stand-in supplies
# (docs/inspector.md, "The task era"); the other texts do not depend on it.

TASK_ERA_FRAGMENTS: dict[str, TextFact] = {
    "base": TextFact(
        667, "fa83bba6036accf05528a3ddac4ab4bcae3e3518f3d997fe1526b894437120cc", 667, 197
    ),
    "background-on": TextFact(
        161, "99e10ad48a4ce0d8fe1b75435a5fcb27800a50622a1885efd980a53c709dc74b", 161, 51
    ),
    "background-off": TextFact(
        92, "1ba3fa5d877dd8397aea6c3f70b3a502157422b3448474712412f844ef3a75cf", 92, 22
    ),
    "escalation": TextFact(
        1011, "ebbe4a42c179456c71170559fe9cac6fa7ca5da55604170a1eea0bcadb8d0335", 1011, 254
    ),
}

TASK_ERA_VARIANTS: dict[str, TextFact] = {
    "A": TextFact(
        828, "611c8badb34bf0a6e1c06a3286ec5a87bb13b2a184fb3a7e12ca39e7c8b96310", 828, 247
    ),
    "B": TextFact(
        1839, "f68dc4a40d1e251a0156a70991ea2bd2190b87b9d3eb26a33166c9ba73fcd79f", 1839, 501
    ),
    "C": TextFact(
        759, "6398d93f6f7afb435162cb7e049870e74c1be773ca62e21650cadd4ceac126b4", 759, 218
    ),
    "D": TextFact(
        1770, "d6539ca13476cccbf16768fe19146d3085838957246f973b96584558ae5c5282", 1770, 472
    ),
}

TASK_ERA_BASH_PARAMS: dict[str, TextFact] = {
    **BASH_PARAMS,
    "run_in_background": TextFact(
        123, "dc3c3c22cfb738d6031d73ce19c6fbaf21ba32a578e3fe28d1c6ae56a02a5222", 123, 34
    ),
}

#: era -> (fragments, whole descriptions by variant letter, bash parameter descriptions).
BY_ERA: dict[str, tuple[dict[str, TextFact], dict[str, TextFact], dict[str, TextFact]]] = {
    CURRENT_ERA: (FRAGMENTS, VARIANTS, BASH_PARAMS),
    TASK_ERA: (TASK_ERA_FRAGMENTS, TASK_ERA_VARIANTS, TASK_ERA_BASH_PARAMS),
}
