"""The way to a usable model: Convert runs only with one, or leads to choosing one.

``ModelSetup.ensure(then)`` is asked before a conversion starts. A usable model (a checked folder,
a hub id in the Hugging Face cache, or one the user chose to use anyway) converts at once. A hub id
not downloaded yet is offered for download (``DownloadDialog``: size, speed, time left, Cancel), and
``then`` runs once it is there; anything else opens the model chooser with what is wrong.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QMessageBox

from app.model_check import MODEL_CONTROLS, check_model, model_name
from app.model_download import DownloadDialog, download_model
from app.welcome import ChooseModelDialog


class ModelSetup(QObject):
    model_changed = Signal(str)
    status = Signal(str)
    failed = Signal(str, str)          # title, message

    def __init__(self, window, demo_folder):
        super().__init__(window)
        self.window = window
        self.settings = window.app_settings
        self.demo_folder = demo_folder
        self.download = download_model     # the one function that talks to the hub (tests pass a fake)
        self.dialog = None                 # the download or choose dialog shown last

    def usable(self) -> bool:
        model = self.settings.conversion().model
        return check_model(model).ok or (bool(model) and self.settings.used_anyway() == model)

    def ensure(self, then) -> bool:
        """True if the configured model is usable; else lead to one and call ``then`` once it is."""
        if self.usable():
            return True
        model = self.settings.conversion().model
        name = model_name(model)
        check = check_model(model)
        if check.downloadable:
            answer = self.ask_download(name, default=not model)
            if answer == "download":
                self.start_download(name, then)
            elif answer == "choose":
                self.choose(f"Choose another model than {name}.", then)
        else:
            self.choose(f"{name} cannot be used: {check.text()}.", then)
        return False

    def ask_download(self, hub_id: str, default: bool) -> str:
        """"download", "choose" or "cancel"."""
        which = "the default model, " if default else ""
        box = QMessageBox(QMessageBox.Icon.Question, "Download the model?",
                          f"{hub_id} ({which}several GB) is not on this computer yet. Download it into the Hugging "
                          "Face cache? The download shows its size and time left, and can be cancelled and "
                          "resumed.", QMessageBox.StandardButton.Cancel, self.window)
        box.setTextFormat(Qt.TextFormat.PlainText)
        download = box.addButton("Download", QMessageBox.ButtonRole.AcceptRole)
        choose = box.addButton("Choose another model…", QMessageBox.ButtonRole.ActionRole)
        box.exec()
        return {download: "download", choose: "choose"}.get(box.clickedButton(), "cancel")

    def start_download(self, hub_id: str, then=None) -> DownloadDialog:
        dialog = DownloadDialog(hub_id, self.download, self.window)
        dialog.downloaded.connect(lambda _folder: self.use(hub_id, then))
        dialog.failed.connect(self.status)
        self.dialog = dialog
        dialog.start()
        return dialog

    def choose(self, reason: str, then=None) -> ChooseModelDialog:
        dialog = ChooseModelDialog(self.demo_folder, reason, self.window)
        self.connect_chooser(dialog.chooser, then)
        self.dialog = dialog
        dialog.open()
        return dialog

    def connect_chooser(self, chooser, then=None) -> None:
        def download(hub_id: str) -> None:
            dialog = self.start_download(hub_id, then)
            dialog.failed.connect(lambda message: chooser.result.setText(f"✗ {message}"))

        chooser.model_chosen.connect(lambda model: self.use(model, then))
        chooser.download_requested.connect(download)
        chooser.demo_failed.connect(lambda error: self.failed.emit("The demo model could not be built", error))

    def use(self, model: str, then=None) -> None:
        conversion = self.settings.conversion()
        conversion.model = model
        self.settings.set_conversion(conversion)
        self.model_changed.emit(model)
        self.status.emit(f"Model set to {model}" + ("" if then else "; open or drop a PDF to convert it"))
        if then is not None:
            then()

    def no_model_line(self) -> str:
        return (f"No usable model yet: the drafts are shown; Convert (Ctrl+R) leads to choosing one "
                f"(or {MODEL_CONTROLS})")
