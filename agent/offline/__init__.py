"""A deterministic stand-in for Gemini, used when no API key is configured: `OfflineResumeModel`.

It drives the real agent through ADK exactly as a model would: it reads the LlmRequest and
answers with function calls, then with text. No network, no randomness: the same
conversation always gets the same reply. The resume and the latest saved plan are read back
from the system instruction prompt.py builds; the conversation so far is the request's contents.

One user turn takes a few calls of the model; each answers with the first step the turn has
not taken yet (the tool responses since the user's message tell which):
  1. the reply's language, by the message's script; with no resume, a one-line notice;
  2. [once per conversation, if the resume holds a flagged line] flag_suspicious_text
     with that line, which is never followed;
  3. the message is classified: a request for a plan or for a change of it, a question
     (salary, weak points, interviews, what to improve, the current plan, a review), or
     small talk;
  4. verify_claims with the 1-2 resume lines the reply will quote;
  5. save_plan, only for a request for a plan or a change: built from the resume's labelled
     lines and every change asked for so far in the conversation;
  6. the final text in the message's language: the offline banner, a greeting by name, the
     quoted lines, the answer, and how many of the reply's claims the resume supports,
     counted by `verify_reply`, the check the service runs on the reply, so the two agree.

Everything the coach says beyond the quoted lines is advice, never a new fact about the
person, so `verify_reply` finds nothing unsupported in an offline reply.

  messages.py  reply_language, classify_message (an Intent), revision_so_far (a Revision);
  resume.py    label_resume_lines, ResumeFacts, role_title;
  replies.py   build_plan, plan_changes, compose_reply: the texts, through gettext;
  model.py     OfflineResumeModel: reading the request, choosing the step.
"""

from agent.offline.model import OfflineResumeModel
from agent.offline.replies import OFFLINE_BANNER, OFFLINE_BANNER_ZH

__all__ = ["OFFLINE_BANNER", "OFFLINE_BANNER_ZH", "OfflineResumeModel"]
