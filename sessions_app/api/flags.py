"""The suspicious-text flags' kinds in the person's words (the API's `label`, in the request's
language): presentation, beside the serializers that show it."""

from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from agent.screening import MODEL_FLAG_KIND

# What each flag's kind means, for the person (the API's `label`, in the request's language).
FLAG_LABELS = {
    "override": _("Asks an AI to ignore or replace its instructions"),
    "role_switch": _("Tries to give an AI a new role"),
    "role_tag": _("Poses as a chat message or a system message"),
    "markup_comment": _("An instruction hidden in a markup comment"),
    "prompt_leak": _("Asks an AI to reveal its hidden instructions"),
    "others_data": _("Asks for other people's data"),
    "tool_call": _("Asks an AI to call a tool or open a link"),
    "output_control": _("Dictates what an AI should reply or save"),
    "addressed": _("An instruction to an AI or to whoever reads the resume"),
    "split": _("Part of an instruction split across lines"),
    "disguised": _("An instruction disguised with look-alike letters"),
    "hidden": _("Characters no resume needs: invisible tags, text-direction overrides or private-use characters"),
    "encoded": _("An instruction hidden in encoded text (base64, ROT13, reversed or spaced-out letters)"),
    "concealed": _("Text the file hides from its reader (white, tiny, off the page or marked hidden)"),
    MODEL_FLAG_KIND: _("The agent found this line tries to instruct it"),
}


class FlagLabel(serializers.CharField):
    """A flag's kind (its `source`) shown as its label, in the request's language."""

    def to_representation(self, value) -> str:
        return str(FLAG_LABELS.get(value, FLAG_LABELS[MODEL_FLAG_KIND]))
