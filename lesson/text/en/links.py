"""A link that reopens a view: the sidebar's link box, and the checks on each value when a link is opened."""

TEXT: dict = {
    "link_title": "Link to this view",
    "link_intro": "Copy the link below: opening it restores the prompt, both lengths, writing past the end of sequence, the model, the language, classroom mode and its step, this page and the labs' settings, then measures again (or opens the recorded run it names).",
    "link_prompt_left_out": "The prompt is too long for a link ({n} characters): opening this link uses the lesson's default prompt.",
    "link_opened": "This view was opened from a link.",
    "link_opened_run": "This view was opened from a link and measured again with its settings.",
    "link_opened_presenter": "This view was opened from a link: its step and figure are applied to the run this server already had; nothing was measured again. To measure with the link's settings, leave the presenter view and press Run.",
    "link_opened_recorded": "This view was opened from a link and shows the recorded run it names, {name}.",
    "link_clamped": "The link's {name}={value} is outside what this server allows; set to {clamped}.",
    "link_not_a_number": "The link's {name}={value} is not a number; left out.",
    "link_not_a_flag": "The link's {name}={value} can only be 1 or 0; left out.",
    "link_not_a_choice": "The link's {name}={value} is not one of the choices ({choices}); left out.",
    "link_too_long": "The link's {name} has {n} characters, over the limit of {limit}; left out.",
    "link_unknown": "The link has values this app does not know ({names}); left out.",
    "link_too_many": "The link has too many values ({n}, at most {limit}): none of it was used.",
    "link_unknown_run": "The recorded run the link names, {name}, is not in this server's gallery; measured again instead.",
}
