"""``usergroupresolver.type: os``: an application sent without groups gets its user's groups from the
host's user database, and those groups decide ACLs."""

import grp
import os
import pwd

from actors.core.usergroups import GroupResolver
from tests.queues import partition, queue

USER = pwd.getpwuid(os.getuid()).pw_name
PRIMARY = grp.getgrgid(pwd.getpwuid(os.getuid()).pw_gid).gr_name
SUPPLEMENTARY = {g.gr_name for g in grp.getgrall() if USER in g.gr_mem}


def config(resolver: str) -> str:
    return partition(queue("root", queue("members", submitacl=f" {PRIMARY}")),
                     usergroupresolver={"type": resolver}, placementrules=[{"name": "provided"}])


def test_the_os_resolver_gives_the_primary_then_the_supplementary_groups():
    groups = GroupResolver("os").groups(USER, ())
    assert groups[0] == PRIMARY and set(groups[1:]) == SUPPLEMENTARY - {PRIMARY}
    assert GroupResolver("os").groups(USER, ("given",)) == ("given",), "groups sent with the application win"
    assert GroupResolver("").groups(USER, ()) == ()


def test_resolved_groups_decide_the_acl_and_an_unknown_user_is_rejected(core_factory):
    core = core_factory(config("os"))
    core.app("mine", queue="root.members", user=USER)
    core.app("stranger", queue="root.members", user="no-such-user-anywhere")
    core.settle()
    assert core.callback.accepted_apps() == ["mine"]
    reasons = {r.applicationID: r.reason for resp in core.callback.applications for r in resp.rejected}
    assert "not known to the scheduler host's user database" in reasons["stranger"]


def test_without_a_resolver_the_acl_sees_no_groups(core_factory):
    core = core_factory(config(""))
    core.app("mine", queue="root.members", user=USER)
    core.settle()
    assert core.callback.accepted_apps() == []

