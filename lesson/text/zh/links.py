"""重新打开一个画面的链接：侧栏里的链接框，以及打开链接时对每个值的检查。"""

TEXT: dict = {
    "link_title": "链接到这个画面",
    "link_intro": "复制下面的链接：打开它会恢复提示词、两个长度、是否越过结束符、模型、语言、课堂模式和步数、当前页面以及实验室的设置，然后重新测量一次（或打开它指向的录制运行）。",
    "link_prompt_left_out": "提示词太长（{n} 个字符），放不进链接：打开这个链接会用本课的默认提示词。",
    "link_opened": "这个画面是按链接打开的。",
    "link_opened_run": "这个画面是按链接打开的，并用链接里的设置重新测量了一次。",
    "link_opened_presenter": "这个画面是按链接打开的：用上了链接里的步和图，画的是这台服务器已有的那次运行，没有重新测量。要按链接里的设置测一次，离开演示视图后按“运行”。",
    "link_opened_recorded": "这个画面是按链接打开的，显示链接指向的录制运行 {name}。",
    "link_clamped": "链接里的 {name}={value} 超出了本服务器允许的范围，已改为 {clamped}。",
    "link_not_a_number": "链接里的 {name}={value} 不是一个数，已忽略。",
    "link_not_a_flag": "链接里的 {name}={value} 只能是 1 或 0，已忽略。",
    "link_not_a_choice": "链接里的 {name}={value} 不是可选的值（{choices}），已忽略。",
    "link_too_long": "链接里的 {name} 有 {n} 个字符，超过上限 {limit}，已忽略。",
    "link_unknown": "链接里有不认识的参数（{names}），已忽略。",
    "link_too_many": "链接里的参数太多（{n} 个，最多 {limit} 个）：整个链接都没有用。",
    "link_unknown_run": "链接指向的录制运行 {name} 不在本服务器的陈列里，已改为重新测量。",
}
